"""Bad-input sweep: call the public functions of ``lib`` with one bad argument at a time.

    python scripts/bad_input_sweep.py                 # this checkout's lib
    python scripts/bad_input_sweep.py --root ../main  # another checkout's lib (e.g. before a change)
    python scripts/bad_input_sweep.py -v              # also list every call without a clear error

Each function has one valid call (below, ``SPECS``) and a kind per argument; each kind brings its
bad values (wrong type, NaN/inf, zero or negative sizes and rates, empty arrays, wrong number of
dimensions, labels out of range, ...). Every bad call is one argument changed in the valid call, and
is classified as

Besides, every field of every configuration dataclass of ``lib`` (``CONFIG_CLASSES``: the class called with
its defaults, one field changed; kinds from the field's type) is swept the same way, and ``MISMATCH`` lists,
per function, values that are valid on their own but do not agree with another argument of the call (a
transposed ``X`` for its labels, a mask of another depth, a float64 batch for float32 nets) or are
degenerate (a zero direction that would be divided by its norm, a NaN weight); the report counts them apart.

- clear:   a ``ValueError``/``TypeError`` whose message names the argument;
- unclear: any other exception, or one that does not name the argument (also: over 20 s);
- none:    no error at all (the bad value was accepted).

Inputs that look bad but are intended (each documented in its docstring and pinned by a test in
``tests/test_validate.py``) are not swept as bad: ``None`` where it is the argument's default (e.g.
``seed=None``-style defaults, ``ids=None`` = all classes, ``targets=None`` = a plain VAE), an empty
batch for ``mlp_forward``, the models' ``forward`` methods and elementwise functions (an empty
result), any shape for elementwise
functions, ``y`` shaped differently but with one value per output for the per-model losses, ``a`` of
any shape holding one value per neuron in ``maxmargin``, an empty spectrum for ``landscape.nr_threshold``
(threshold 0), a negative ``axis``, and ``epochs=0`` /
``max_steps=0`` where zero steps is documented.

Arguments of kind ``None`` are not varied (flags, progress bars, and ``self``: a public method
``Class.method`` is called as the class's plain function with ``self=`` an instance). Network-only loaders (``fetch``,
``load_online``, ``cifar100_protocol``, ``load_imdb_sentences``) are not called.

Every public function, class and method of ``MODULES`` has a valid call here or a stated reason in
``NOT_SWEPT`` (network-only loaders; model methods that a trainer calls every step on tensors it has
checked); ``unswept()`` lists the rest, and ``tests/test_bad_input_properties.py`` asks for none.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import math
import signal
import sys
import warnings
from pathlib import Path

import numpy as np

MODULES = ("boolean", "boolean_families", "distill", "equivalence", "nets", "train", "results", "scale",
           "pruning", "maxmargin", "multiexit", "mae", "data", "leaky_1d",
           # chapter modules added later (their specs use lib["<name>"]); one per line:
           "annulus",
           "annulus_training",
           "linear_regions",
           "skip_connections",
           "landscape",
           "decision_regions",
           "teacher_student",
           "teacher_student_conv",
           "smoke",
           "image_nets",
           "network_comparison",
           )
NAN = float("nan")
INF = float("inf")


# ----------------------------------------------------------------------------------------------
# bad values per kind

def _nan_inside(v):
    import torch
    if isinstance(v, torch.Tensor):
        v = v.detach().clone().double() if not v.is_floating_point() else v.detach().clone()
        v.view(-1)[0] = NAN
        return v
    a = np.array(v, dtype=float)
    a.reshape(-1)[0] = NAN
    return a


def _inf_inside(v):
    import torch
    if isinstance(v, torch.Tensor):
        v = v.detach().clone().double() if not v.is_floating_point() else v.detach().clone()
        v.view(-1)[-1] = INF
        return v
    a = np.array(v, dtype=float)
    a.reshape(-1)[-1] = INF
    return a


def _empty(v):
    import torch
    if isinstance(v, torch.Tensor):
        return v[:0]
    return np.asarray(v)[:0]


def _wrong_ndim(v):
    import torch
    if isinstance(v, torch.Tensor):
        return v.reshape(-1) if v.ndim >= 2 else v[None, None]
    a = np.asarray(v)
    return a.reshape(-1) if a.ndim >= 2 else a[None, None]


def _out_of_range(v):
    import torch
    if isinstance(v, torch.Tensor):
        out = v.clone()
        out.view(-1)[0] = int(v.max()) + 100
        return out
    a = np.array(v)
    a.reshape(-1)[0] = a.max() + 100
    return a


def _negative_label(v):
    import torch
    out = v.clone() if isinstance(v, torch.Tensor) else np.array(v)
    out.reshape(-1)[0] = -1
    return out


def _fractional(v):
    import torch
    out = v.double().clone() if isinstance(v, torch.Tensor) else np.array(v, dtype=float)
    out.reshape(-1)[0] = 0.5
    return out


def _params_nan(p):
    import torch
    out = [(W.clone() if isinstance(W, torch.Tensor) else np.array(W, dtype=float),
            b.clone() if isinstance(b, torch.Tensor) else np.array(b, dtype=float)) for W, b in p]
    out[0][0].reshape(-1)[0] = NAN
    return out


def _params_mismatch(p):
    """Layer 2 expects one input fewer than layer 1 gives (shapes that do not chain)."""
    W, b = p[1]
    return [p[0], (W[:, :-1], b)] + list(p[2:])


def _none_item(v):
    """A tuple field whose first item is None (every item of every tuple field is a number, a str or a tuple)."""
    if not len(v):
        raise ValueError("an empty tuple has no item to replace")
    return (None,) + tuple(v[1:])


ARRAY_BAD = {"empty": _empty, "wrong ndim": _wrong_ndim, "NaN inside": _nan_inside,
             "inf inside": _inf_inside, "string": lambda v: "abc", "None": lambda v: None}
BAD = {
    "count": {"0": 0, "-1": -1, "2.5": 2.5, "str '3'": "3", "None": None, "bool True": True},
    "nonneg_int": {"-1": -1, "2.5": 2.5, "str '3'": "3", "None": None, "bool True": True},
    "axis": {"out of range": 7, "2.5": 2.5, "str '3'": "3", "None": None},
    "seed": {"-1": -1, "2.5": 2.5, "str 'x'": "x"},
    "rate": {"0": 0.0, "-1": -1.0, "NaN": NAN, "inf": INF, "str '0.1'": "0.1", "None": None},
    "nonneg": {"-1": -1.0, "NaN": NAN, "inf": INF, "str 'x'": "x", "None": None},
    "real": {"NaN": NAN, "inf": INF, "str 'x'": "x", "None": None},
    "slope": {"-0.1": -0.1, "1.5": 1.5, "NaN": NAN, "str 'x'": "x", "None": None},
    "fraction": {"-0.1": -0.1, "1.5": 1.5, "NaN": NAN, "str 'x'": "x", "None": None},
    "choice": {"unknown name": "no-such-choice", "int": 3, "None": None},
    "device": {"unknown name": "no-such-choice", "int": 3},  # None is valid everywhere: REPRO_DEVICE
    "str": {"int": 3, "None": None},
    "callable": {"None": None, "int": 3},
    "widths": {"empty": [], "zero width": "ZERO", "negative width": "NEG", "float width": "FLOAT",
               "string": "abc", "None": None},
    "params": {"empty": [], "None": None, "string": "abc", "NaN inside": _params_nan,
               "shape mismatch": _params_mismatch},
    "model": {"None": None, "string": "abc"},  # an object of the wrong kind
    "dict": {"None": None, "string": "abc", "list": [1, 2]},
    "list": {"None": None, "int": 3},
    "array": ARRAY_BAD,
    "array_nd": {k: v for k, v in ARRAY_BAD.items() if k != "wrong ndim"},  # any ndim allowed
    # elementwise functions: any shape, and an empty input gives an empty result (intended, tested)
    "elementwise": {k: v for k, v in ARRAY_BAD.items() if k not in ("wrong ndim", "empty")},
    "batch": {k: v for k, v in ARRAY_BAD.items() if k != "empty"},  # an empty batch: empty output
    "corr": {"1.5": 1.5, "-1.5": -1.5, "NaN": NAN, "str 'x'": "x", "None": None},
    "targets": {"string": "abc", "NaN target": [NAN], "negative target": [-1.0]},
    "labels": {**ARRAY_BAD, "label out of range": _out_of_range, "negative label": _negative_label},
    "int_array": {**{k: v for k, v in ARRAY_BAD.items() if k not in ("NaN inside", "inf inside")},
                  "out of range": _out_of_range, "negative": _negative_label, "fractional": _fractional},
    # configuration fields: every float field is a rate, a scale or a share (>= 0: -1 is bad for each);
    # every tuple field holds numbers, strs or tuples (a None item is bad for each)
    "cfg_float": {"-1": -1.0, "NaN": NAN, "inf": INF, "str '0.1'": "0.1", "None": None},
    "cfg_tuple": {"None": None, "int": 3, "string": "abc", "None item": _none_item},
    "shape_only": {k: v for k, v in ARRAY_BAD.items() if k in ("wrong ndim", "string", "None")},  # per-step forwards
    "table": {"empty": _empty, "NaN inside": _nan_inside, "not 0/1": lambda v: np.full(np.shape(v), 2),
              "length not 2^n": lambda v: np.asarray(v)[..., :3], "string": lambda v: "abc",
              "None": lambda v: None},
}


def _widths_bad(valid, key):
    valid = list(valid)
    if key == "ZERO":
        return valid[:-1] + [0] if len(valid) > 1 else [0]
    if key == "NEG":
        return [-2] + valid[1:]
    if key == "FLOAT":
        return [2.5] + valid[1:]
    return key


def _teacher_student_specs(TSM, C, NI, SE, RA, RE, A):
    """lib.teacher_student (chapter 09): one valid call per public function."""
    T = lambda: TSM.make_teacher(4, 3, 2, seed=0)
    st = lambda: TSM.make_student(4, 5, 2, scale=0.5, seed=1)
    X = lambda: TSM.gaussian_inputs(12, 4, seed=2)
    H = lambda: np.maximum(np.random.default_rng(0).standard_normal((12, 3)), 0.0)
    DX = lambda: TSM.gaussian_inputs(12, 3, seed=0)
    D = lambda: TSM.make_teacher_deep(3, [4, 3], 2, DX(), seed=1)
    Ds = lambda: TSM.make_student_deep(3, [5, 4], 2, scale=1.0, seed=2)
    pair = lambda: dict(teacher=(T(), "params"), student=(st(), "params"), X=(X(), A))
    train = lambda: dict(pair(), steps=(2, NI), lr=(0.01, RA), batch_size=(4, SE), seed=(0, SE))
    deep = lambda: dict(teacher=(D(), "params"), student=(Ds(), "params"), X=(DX(), A))
    return [
        ("teacher_student", "discrete_distinct_rows", lambda: dict(rows=(3, C), cols=(2, C), seed=(0, SE), choices=((-1.0, 0.0, 1.0), A))),
        ("teacher_student", "make_teacher", lambda: dict(d=(4, C), m=(3, C), C=(2, C), p=(1.0, "nonneg"), bias=(-0.1, RE), seed=(0, SE))),
        ("teacher_student", "make_student", lambda: dict(d=(4, C), n=(5, C), C=(2, C), S=(2, C), scale=(0.5, RA), seed=(0, SE))),
        ("teacher_student", "gaussian_inputs", lambda: dict(N=(5, C), d=(3, C), std=(1.5, RA), seed=(0, SE))),
        ("teacher_student", "hidden_and_output", lambda: dict(net=(st(), "params"), X=(X(), A))),
        ("teacher_student", "two_layer_flops", lambda: dict(d=(3, C), n=(4, C), C=(5, C), batch=(2, C))),
        ("teacher_student", "correlation_matrix", lambda: dict(H_teacher=(H(), A), H_student=(H(), A))),
        ("teacher_student", "best_correlation", lambda: dict(H_teacher=(H(), A), H_student=(H(), A))),
        ("teacher_student", "specialisation_steps", lambda: dict(best_history=(np.full((3, 2), 0.5), A), steps=(np.array([0, 5, 9]), A),
                                                                  threshold=(0.9, "corr"))),
        ("teacher_student", "fan_out_norms", lambda: dict(net=(st(), "params"))),
        ("teacher_student", "alignment", lambda: dict(w_teacher=(np.array([1.0, 0.0]), A), b_teacher=(0.1, RE),
                                                       w_student=(np.array([1.0, 1.0]), A), b_student=(0.2, RE))),
        ("teacher_student", "prune_students", lambda: dict(student=(st(), "params"), keep=(np.array([True, False, True, True, False]), A))),
        ("teacher_student", "train_two_layer", train),
        ("teacher_student", "train_with_snapshots", lambda: dict(train(), record_at=([0, 2], "list"))),
        ("teacher_student", "recursive_gradients", pair),
        ("teacher_student", "recursive_terms", pair),
        ("teacher_student", "axis_augment", lambda: dict(X=(X(), A), delta=(0.1, RA))),
        ("teacher_student", "teacher_aware_augment", lambda: dict(X=(X(), A), teacher=(T(), "params"), delta=(0.1, RA), eps=(0.5, RA))),
        ("teacher_student", "teacher_aware_inputs", lambda: dict(teacher=(T(), "params"), N=(9, C), std=(1.5, RA), alpha=((1.0, 2.0), "list"),
                                                                  seed=(0, SE))),
        ("teacher_student", "make_teacher_deep", lambda: dict(d=(3, C), widths=([4, 3], "widths"), C=(2, C), X_tune=(DX(), A), seed=(0, SE))),
        ("teacher_student", "make_student_deep", lambda: dict(d=(3, C), widths=([5, 4], "widths"), C=(2, C), S=(2, C), scale=(0.1, RA),
                                                               seed=(0, SE))),
        ("teacher_student", "deep_activations", lambda: dict(net=(Ds(), "params"), X=(DX(), A))),
        ("teacher_student", "layer_best_correlations", deep),
        ("teacher_student", "train_deep", lambda: dict(deep(), steps=(2, NI), lr=(0.01, RA), batch_size=(4, SE), seed=(0, SE),
                                                        record_at=([0, 2], "list"))),
    ]


def _image_nets_specs(IN, C, SE, A):
    """lib.image_nets (chapter 08, image networks): one valid call per public function."""
    import torch
    from lib.data import DataSplit
    g = lambda: torch.Generator().manual_seed(0)
    split = lambda: DataSplit(torch.randn(20, 64, generator=g()), torch.arange(20) % 10, torch.randn(6, 64, generator=g()),
                              torch.arange(6) % 10, "toy")
    net = lambda arch="dense": IN.make_net(arch, 0)
    X = lambda: torch.randn(5, 64, generator=g()).numpy()
    v = lambda i: np.random.default_rng(i).standard_normal(64)
    return [
        ("image_nets", "standardise", lambda: dict(split=(split(), "model"))),
        ("image_nets", "make_net", lambda: dict(arch=("simple", "choice"), seed=(0, SE))),
        ("image_nets", "train_net", lambda: dict(net=(net("linear"), "model"), split=(split(), "model"), optimiser=("adamw", "choice"),
                                                  epochs=(1, C), batch_size=(8, C), seed=(0, SE), progress=(False, None))),
        ("image_nets", "make_optimiser", lambda: dict(net=(net(), "model"), optimiser=("sgd", "choice"))),
        ("image_nets", "zoo_names", lambda: dict(archs=(("linear", "dense"), "list"), copies=(1, C), optimisers=(("sgd",), "list"))),
        ("image_nets", "train_zoo", lambda: dict(split=(split(), "model"), epochs=(1, C), seed=(0, SE), archs=(("linear",), "list"),
                                                  copies=(1, C), progress=(False, None), optimisers=(("adamw",), "list"))),
        ("image_nets", "local_coefficients", lambda: dict(net=(net("simple"), "model"), X=(X(), A), chunk=(2, C))),
        ("image_nets", "accuracy", lambda: dict(net=(net(), "model"), X=(X(), A), y=(np.arange(5), "labels"))),
        ("image_nets", "activation_pattern", lambda: dict(net=(net("complex"), "model"), X=(X(), A))),
        ("image_nets", "closest_triple", lambda: dict(X=(X(), A))),
        ("image_nets", "plane_through", lambda: dict(A=(v(0), A), B=(v(1), A), C=(v(2), A))),
        ("image_nets", "plane_points", lambda: dict(origin=(v(0), A), e1=(v(1), A), e2=(v(2), A), coords=(np.ones((3, 2)), A))),
        ("image_nets", "region_labels", lambda: dict(keys=(np.arange(9.0)[:, None] // 4, A), p=(3, C), tol=(1e-9, "nonneg"))),
        ("image_nets", "dense_plane_params", lambda: dict(net=(net(), "model"), origin=(v(0), A), e1=(v(1), A), e2=(v(2), A))),
        ("image_nets", "gradient_covariance", lambda: dict(J=(np.ones((4, 3, 5)), A))),
        ("image_nets", "gradient_spectrum", lambda: dict(J=(np.random.default_rng(0).normal(size=(4, 3, 5)), A), n_vectors=(2, C))),
        ("image_nets", "input_width", lambda: dict(net=(net("simple"), "model"))),
        ("image_nets", "anchor_plane", lambda: dict(X=(X(), A), margin=(0.15, "nonneg"))),
        ("image_nets", "paper_images", lambda: dict(X=(torch.rand(3, 28, 28, generator=g()), A))),
        ("image_nets", "standardise_channels", lambda: dict(split=(DataSplit(torch.rand(6, 3, 8, 8, generator=g()), torch.arange(6) % 3,
                                                                            torch.rand(2, 3, 8, 8, generator=g()), torch.arange(2), "toy"),
                                                                  "model"), shape=((3, 8, 8), "list"))),
        ("image_nets", "plane_keys", lambda: dict(net=(net(), "model"), origin=(v(0), A), e1=(v(1), A), e2=(v(2), A),
                                                   coords=(np.ones((3, 2)), A), chunk=(2, C))),
    ]


def _network_comparison_specs(NCM, C, SE, RA, A):
    """lib.network_comparison (chapter 08, comparisons): one valid call per public function."""
    Cm = lambda s=0: np.random.default_rng(s).normal(size=(2, 6, 3))
    Xn = lambda: np.random.default_rng(3).normal(size=(6, 2))
    lg = lambda s=0: np.random.default_rng(s).normal(size=(6, 3))
    return [
        ("network_comparison", "coefficient_matrices", lambda: dict(J=(np.ones((6, 2, 2)), A), y=(np.ones((6, 2)), A))),
        ("network_comparison", "affine_outputs", lambda: dict(C=(Cm(), A), X=(Xn(), A))),
        ("network_comparison", "predict", lambda: dict(outputs=(lg(), A))),
        ("network_comparison", "accuracy", lambda: dict(outputs=(lg(), A), labels=(np.arange(6) % 3, "labels"))),
        ("network_comparison", "kmeans_centres", lambda: dict(C=(Cm(), A), k=(2, C), seed=(0, SE), n_init=(1, C), standardize=(False, None))),
        ("network_comparison", "compress", lambda: dict(C_train=(Cm(), A), C_test=(Cm(1), A), k=(2, C), seed=(0, SE), n_init=(1, C),
                                                        standardize=(True, None))),
        ("network_comparison", "affine_map", lambda: dict(C_source=(Cm(), A), C_target=(Cm(1), A), rcond=(1e-10, RA))),
        ("network_comparison", "relative_residual", lambda: dict(C_source=(Cm(), A), M=(np.ones((2, 3, 3)), A), C_target=(Cm(1), A))),
        ("network_comparison", "msed", lambda: dict(C_a=(Cm(), A), C_b=(Cm(1), A))),
        ("network_comparison", "linear_cka", lambda: dict(X=(Cm()[0], A), Y=(Cm(1)[0], A), tol=(1e-5, "nonneg"))),
        ("network_comparison", "mean_cka", lambda: dict(C_a=(Cm(), A), C_b=(Cm(1), A), tol=(1e-5, "nonneg"))),
        ("network_comparison", "cross_entropy", lambda: dict(logits_p=(lg(), A), logits_q=(lg(1), A))),
        ("network_comparison", "similarity_matrix", lambda: dict(items=([1.0, 2.0], "list"), metric=(lambda a, b: a - b, "callable"))),
        ("network_comparison", "block_means", lambda: dict(S=(np.eye(3), A), families=(["a", "a", "b"], "list"), skip_nan=(False, None))),
        ("network_comparison", "read_heatmap", lambda: dict(text=(NCM.FIG_7_9_TEXT, "str"), dataset=("CIFAR", "choice"), tol=(0.06, "nonneg"))),
        ("network_comparison", "mapped_coefficients", lambda: dict(C_source_train=(Cm(), A), C_source_test=(Cm(1), A),
                                                                    C_target_train=(Cm(2), A), rcond=(1e-10, RA))),
        ("network_comparison", "cka_matrix", lambda: dict(Cs=([Cm(), Cm(1), Cm(2)], "list"), tol=(1e-5, "nonneg"))),
    ]


# ----------------------------------------------------------------------------------------------
# one valid call per public function: (module, name, factory returning {arg: (value, kind)})

def _specs():
    import torch
    lib = {m: importlib.import_module(f"lib.{m}") for m in MODULES}
    B, BF, D, E, N, T, R, S, P, MM, ME, MA, DA, LK = (lib[m] for m in MODULES[:14])
    t = torch.tensor
    g = torch.Generator().manual_seed(0)
    xor2 = np.array([0, 1, 1, 0])
    tables3 = np.array([[0, 1, 1, 0, 1, 0, 0, 1], [0, 0, 0, 1, 0, 1, 1, 1]])
    net_np = lambda: E.random_network([2, 3, 1], seed=0)
    net_t = lambda: N.init_mlp([2, 3, 1], seed=0)
    net2 = lambda: E.identifiable_network([2, 2, 1], seed=0)
    bnet = lambda: B.swaps_network(xor2, 0.0)
    Xb = lambda: B.cube(2, pm=False).astype(float)
    rng = lambda: np.random.default_rng(0)
    Xd = lambda: np.random.default_rng(0).standard_normal((6, 4))
    wd = lambda: np.array([1.0, 0.5, -0.5, 0.2])
    yd = lambda: np.array([0.1, 0.9, 0.5, 0.3, 0.7, 0.2])
    q = D.poly_angle_quantile(1.0)
    Xpm = lambda: MM.orthogonally_separable_gaussian(20, 3, seed=0)
    mm_params = lambda: MM.default_init([(4, 3), (1, 4)], 2, 0, 0.1)
    Wm = lambda: np.random.default_rng(1).standard_normal((5, 3))
    am = lambda: np.array([1.0, -1.0, 0.5, -0.5, 1.0])
    wp, wm = (lambda: np.array([1.0, 0.0, 0.0])), (lambda: np.array([0.0, 1.0, 0.0]))
    stacked = lambda: B.StackedMLP([2, 3, 1], 2, 0.1, 0)
    masked = lambda: P.MaskedMLP(2, 3, 2, 2, 0.1, 0)
    cnn = lambda: P.PrunableCNN(1, 8, channels=4, classes=3, seed=0)
    Ximg = lambda: torch.randn(12, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    y3 = lambda: torch.arange(12) % 3
    mecnn = lambda: ME.MultiExitCNN(widths=(4, 4), strides=(1, 2), n_classes=3, seeds=(0,))
    logits = lambda: [torch.randn(5, 3, generator=torch.Generator().manual_seed(i)) for i in range(2)]
    probs = lambda: np.full((1, 2, 6, 3), 1 / 3) + np.random.default_rng(0).uniform(0, 0.01, (1, 2, 6, 3))
    y6 = lambda: np.arange(6) % 3
    fmae = lambda: MA.FiniteMAE([0], torch.full((4,), 0.25), hidden=4)
    nmae = lambda: MA.NormalMAE([0], hidden=4)
    bm = lambda: N.BatchedMLP([2, 3, 1], n_models=2)
    Xt = lambda: torch.randn(8, 2, generator=torch.Generator().manual_seed(0))
    ypm = lambda: torch.tensor([1.0, -1.0] * 4)
    cfg_me = lambda: __import__("dataclasses").replace(ME.CONFIGS.quick, epochs=1, batch_size=4)
    root = Path(__import__("tempfile").mkdtemp())
    scales = lambda: S.ChapterScales("how_to_read", quick=1, full=2, paper=3)
    ring = lambda: [(np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]), np.full(4, -1.0)),
                    (np.full((1, 4), -1.0), np.array([1.5]))]
    leak = lambda: lib["annulus_training"].LeakEnsemble([3, 4, 1], [0, 1], np.array([0.0, 0.1]))
    Xs = lambda: torch.randn(8, 2, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64).float()
    ys = lambda: torch.tensor([[1.0, 1.0]] * 4 + [[-1.0, -1.0]] * 4)
    net1d = lambda: E.random_network([1, 3, 1], seed=0)
    cnet = lambda: lib["teacher_student_conv"].ConvNet([2, 2], classes=3, image=(3, 8, 8), seed=0)
    cimg = lambda: torch.rand(4, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    smae = lambda: MA.SequenceMAE(torch.tensor([[2, 3, 0], [3, 2, 0]]), vocab_size=5, latent_dim=2, emb=4, hidden=4, k=1, seed=0)
    regs = lambda: E.linear_regions_2d(net_np(), (-1, 1))
    skm = lambda: lib["skip_connections"].SkipMLP([2, 4, 3, 3], [0, 1], 3)
    skc = lambda: lib["skip_connections"].SkipCNN((("conv", 2, 3, 1), ("pool",), ("fc", 3)), (1, 8, 8), 3, 0, 4)
    yt8 = lambda: torch.arange(8) % 3
    X32 = lambda: torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))  # CIFAR's shape (Tables 4.3-4.5)
    y4 = lambda: torch.arange(4) % 2
    LS, DRM = lib["landscape"], lib["decision_regions"]
    ls_X = lambda: LS.gaussian_points(3, 5, 0)           # rank X = N = 3 <= d = 5 (Thm 3.4.9)
    ls_y = lambda: np.array([0, 1, 1])
    ls_net = lambda s=0: LS.init_net([5, 4, 3, 2], s)   # strictly decreasing widths
    ls_sig = lambda: LS.init_net([2, 4, 3, 2], 0)       # n_1 = 4 >= N = 3 (Lemma 2.4.9)
    ls_img = lambda: np.random.default_rng(0).random((5, 64))
    dr_net = lambda: [(np.array([[1.0, 0.5], [-0.3, 1.0]]), np.array([0.1, -0.2])),
                      (np.array([[1.0, 2.0], [0.0, -1.0]]), np.array([0.5, 0.0]))]
    dr_pts = lambda: np.random.default_rng(0).uniform(-2, 2, (6, 2))
    ls_wide = lambda s=0, top=(): LS.init_net([5, 6, *top, 2], s)  # n_1 = 6 >= 2N (Thm 3.4.16, 3.4.17)
    ls_cp = lambda: np.random.default_rng(8).standard_normal((3, 3))  # copy step: N = 3 samples ...
    ls_cw = lambda s=1: np.random.default_rng(s).standard_normal((6, 3))  # ... n = 6 >= 2N units
    C, NI, SE, RA, RE = "count", "nonneg_int", "seed", "rate", "real"
    A, TA = "array", "array"

    return [
        # boolean
        ("boolean", "check_tables", lambda: dict(tables=(tables3, "table"), max_n=(5, C))),
        ("boolean", "cube", lambda: dict(n=(3, C))),
        ("boolean", "table_to_id", lambda: dict(table=(xor2, "table"))),
        ("boolean", "truth_table", lambda: dict(ids=(np.array([3, 5]), "int_array"), n=(2, C))),
        ("boolean", "parity_table", lambda: dict(n=(3, C))),
        ("boolean", "npn_transforms", lambda: dict(n=(2, C))),
        ("boolean", "npn_class_id", lambda: dict(table=(xor2, "table"))),
        ("boolean", "npn_classes", lambda: dict(n=(2, C))),
        ("boolean", "change_counts", lambda: dict(tables=(tables3, "table"))),
        ("boolean", "swaps_many", lambda: dict(tables=(tables3, "table"), batch=(8, C))),
        ("boolean", "swaps", lambda: dict(table=(xor2, "table"))),
        ("boolean", "swaps_branch_and_bound", lambda: dict(table=(xor2, "table"))),
        ("boolean", "best_projection", lambda: dict(table=(xor2, "table"))),
        ("boolean", "changes_along", lambda: dict(table=(xor2, "table"), w=(np.array([1.0, 2.0]), A))),
        ("boolean", "thesis_case_weights", lambda: dict(n=(3, C))),
        ("boolean", "thesis_swaps", lambda: dict(tables=(tables3, "table"))),
        ("boolean", "fourier", lambda: dict(tables=(tables3, "table"))),
        ("boolean", "degree", lambda: dict(tables=(tables3, "table"))),
        ("boolean", "influence", lambda: dict(tables=(tables3, "table"))),
        ("boolean", "fourier_entropy", lambda: dict(tables=(tables3, "table"))),
        ("boolean", "network_output", lambda: dict(params=(bnet(), "params"), X=(Xb(), A), alpha=(0.0, "slope"))),
        ("boolean", "interpolation_slopes", lambda: dict(slopes=(np.array([1.0, -1.0, 1.0]), A), alpha=(0.1, "slope"))),
        ("boolean", "swaps_network", lambda: dict(table=(xor2, "table"), alpha=(0.0, "slope"))),
        ("boolean", "sawtooth_network", lambda: dict(width=(2, C), depth=(2, C), alpha=(0.0, "slope"))),
        ("boolean", "parity_network", lambda: dict(n=(3, C), width=(2, C), depth=(2, C), alpha=(0.0, "slope"))),
        ("boolean", "StackedMLP", lambda: dict(widths=([2, 3, 1], "widths"), n_nets=(2, C), alpha=(0.1, "slope"), seed=(0, SE),
                                                 device=("cpu", "device"))),
        ("boolean", "train_boolean_nets", lambda: dict(tables=(xor2[None], "table"), width=(3, C), depth=(1, C), alpha=(0.1, "slope"),
                                                         trials=(2, C), epochs=(3, C), lr=(0.025, RA), seed=(0, SE),
                                                         progress=(False, None), compact_every=(100, C), device=("cpu", "device"))),
        ("boolean", "subnetworks", lambda: dict(model=(stacked(), "model"), subsets=([(0, 1)], "list"), nets=([0], "list"))),
        ("boolean", "prune_and_finetune", lambda: dict(table=(xor2, "table"), width=(3, C), alpha=(0.1, "slope"), parents=(2, C),
                                                         epochs=(3, C), lr=(0.025, RA), seed=(0, SE), max_width=(2, C),
                                                         progress=(False, None), device=("cpu", "device"))),
        ("boolean", "xor1d_local_optima", lambda: dict(n_nets=(3, C), steps=(5, C), lr=(0.1, RA), seed=(0, SE))),
        ("boolean", "relu_sign_pattern", lambda: dict(w=(np.array([[1.0, -1.0], [0.5, 2.0]]), A), b=(np.array([[0.5, 0.1], [-0.2, 0.3]]), A))),
        ("boolean", "StackedMLP.forward", lambda: dict(self=(stacked(), None), X=(t(Xb(), dtype=torch.float32), "batch"))),
        ("boolean", "npn_class_ids_all", lambda: dict(n=(2, C))),
        ("boolean", "order_types", lambda: dict(n=(2, C))),
        ("boolean", "swaps_all", lambda: dict(n=(2, C))),
        ("boolean", "climb_max_swaps", lambda: dict(n=(2, C), restarts=(2, C), seed=(0, SE), max_steps=(3, NI),
                                                      sideways=(1, NI), progress=(False, None))),
        # boolean_families
        ("boolean_families", "random_tables", lambda: dict(n=(3, C), count=(4, C), seed=(0, SE))),
        ("boolean_families", "xor_parity_tables", lambda: dict(n=(4, C), ids=(np.array([65500, 2]), "int_array"))),
        ("boolean_families", "or_table", lambda: dict(n=(3, C))),
        ("boolean_families", "bent_table", lambda: dict(n=(4, C))),
        ("boolean_families", "parity_solvable", lambda: dict(n=(3, C), width=(3, C), depth=(2, C))),
        ("boolean_families", "fourier_metrics", lambda: dict(tables=(tables3, "table"))),
        ("boolean_families", "xor_parity_metrics", lambda: dict(n=(4, C), ids=(np.array([65500, 2]), "int_array"))),
        ("boolean_families", "train_accuracy", lambda: dict(tables=(xor2[None], "table"), width=(3, C), depth=(1, C),
                                                              alpha=(0.1, "slope"), trials=(2, C), epochs=(3, C),
                                                              lr=(0.025, RA), seed=(0, SE), progress=(False, None))),
        # distill
        ("distill", "span_projection", lambda: dict(X=(Xd(), A), w=(wd(), A))),
        ("distill", "soft_labels", lambda: dict(X=(Xd(), A), w_teacher=(wd(), A), temperature=(1.0, RA))),
        ("distill", "hard_labels", lambda: dict(X=(Xd(), A), w_teacher=(wd(), A))),
        ("distill", "ce_loss", lambda: dict(w=(wd(), A), X=(Xd(), A), y=(yd(), A))),
        ("distill", "ce_grad", lambda: dict(w=(wd(), A), X=(Xd(), A), y=(yd(), A))),
        ("distill", "default_lr", lambda: dict(X=(Xd(), A), depth=(2, C), target_norm=(2.0, RA), factor=(1.0, RA))),
        ("distill", "gd_linear", lambda: dict(X=(Xd(), A), y=(yd(), A), steps=(5, C), lr=(0.1, RA))),
        ("distill", "balanced_rank1_init", lambda: dict(w0=(wd(), A), depth=(2, C), width=(3, C))),
        ("distill", "end_to_end", lambda: dict(factors=(D.balanced_rank1_init(wd(), 2, 3), "list"))),
        ("distill", "balancedness_defect", lambda: dict(factors=(D.balanced_rank1_init(wd(), 2, 3), "list"))),
        ("distill", "train_linear_student", lambda: dict(X=(Xd(), A), w_teacher=(wd(), A), steps=(5, C), lr=(0.1, RA),
                                                           depth=(2, C), init_scale=(0.1, "nonneg"), seed=(0, SE), width=(3, C))),
        ("distill", "predicted_orthogonal_residual", lambda: dict(q0=(0.05, "nonneg"), r0=(0.3, "nonneg"), w_hat_norm=(1.0, RA), depth=(2, C))),
        ("distill", "d40_bound", lambda: dict(r0=(0.3, "nonneg"), w_hat_norm=(1.0, RA), depth=(2, C))),
        ("distill", "init_norm_threshold", lambda: dict(eps=(0.1, RA), w_hat_norm=(1.0, RA), depth=(2, C))),
        ("distill", "newton_in_span", lambda: dict(X=(Xd(), A), y=(yd(), A), iters=(5, C))),
        ("distill", "train_hard_label_student", lambda: dict(X=(Xd(), A), w_teacher=(wd(), A), steps=(5, C), lr=(0.1, RA))),
        ("distill", "hard_margin_svm", lambda: dict(X=(Xd()[:3], A), w_teacher=(wd(), A))),
        ("distill", "mc_risk_pvalues", lambda: dict(exact=(np.array([0.1, 0.25]), A), mc=(np.array([0.2, 0.3]), A), n_test=(10, C))),
        ("distill", "w_delta", lambda: dict(X=(Xd()[:2], A), w_hat=(wd(), A), delta=(3.0, RE), g=(np.array([0.0, 0.0, 1.0, 0.0]), A))),
        ("distill", "poly_angle_quantile", lambda: dict(kappa=(1.0, RA))),
        ("distill", "margin_angle_quantile", lambda: dict(beta0=(0.5, RA))),
        ("distill", "reverse_cdf", lambda: dict(theta=(np.array([0.1, 0.5]), A), kappa=(1.0, RA))),
        ("distill", "sample_angle_task", lambda: dict(n=(5, C), d=(4, C), quantile=(q, "callable"), rng=(rng(), "model"),
                                                        w_teacher=(wd(), A))),
        ("distill", "signed_angle", lambda: dict(u=(wd(), A), v=(wd()[::-1].copy(), A))),
        ("distill", "unsigned_angle", lambda: dict(u=(wd(), A), v=(wd()[::-1].copy(), A))),
        ("distill", "transfer_risk_exact", lambda: dict(w=(wd(), A), w_teacher=(wd()[::-1].copy(), A), d=(4, C),
                                                          quantile=(q, "callable"), ngrid=(50, C))),
        ("distill", "transfer_risk_mc", lambda: dict(w=(wd(), A), w_teacher=(wd()[::-1].copy(), A), X_test=(Xd(), A))),
        ("distill", "risk_bound_519", lambda: dict(p_fn=(lambda b: b / np.pi * 2, "callable"), n=(5, C), nbeta=(21, C))),
        ("distill", "lemma_d3_angle", lambda: dict(eps=(0.1, "nonneg"), w_norm=(1.0, RA))),
        ("distill", "thmD4_bound", lambda: dict(p_fn=(lambda b: b / np.pi * 2, "callable"), n=(5, C), eps=(0.01, "nonneg"),
                                                  w_hat_norm=(1.0, RA), nbeta=(21, C))),
        ("distill", "cor51_bound", lambda: dict(gamma=(0.5, "fraction"), n=(5, C))),
        ("distill", "cor52_bound", lambda: dict(kappa=(1.0, RA), n=(5, C))),
        ("distill", "monotonicity_counts", lambda: dict(angle_before=(np.array([0.5, 0.4, 0.3]), A),
                                                          angle_after=(np.array([0.4, 0.4, 0.35]), A), tie_tol=(1e-7, "nonneg"))),
        # equivalence
        ("equivalence", "widths_of", lambda: dict(params=(net_np(), "params"))),
        ("equivalence", "preactivations", lambda: dict(params=(net_np(), "params"), X=(Xd()[:, :2], A), alpha=(0.0, "slope"))),
        ("equivalence", "forward", lambda: dict(params=(net_np(), "params"), X=(Xd()[:, :2], A), alpha=(0.0, "slope"))),
        ("equivalence", "random_network", lambda: dict(widths=([2, 3, 1], "widths"), seed=(0, SE), bias_std=(0.5, "nonneg"))),
        ("equivalence", "apply_symmetry", lambda: dict(params=(net_np(), "params"), perms=([np.array([2, 0, 1])], "list"),
                                                         scales=([np.array([1.0, 2.0, 0.5])], "list"))),
        ("equivalence", "random_symmetry", lambda: dict(params=(net_np(), "params"), seed=(0, SE), log_std=(0.5, "nonneg"))),
        ("equivalence", "canonicalize", lambda: dict(params=(net_np(), "params"))),
        ("equivalence", "align", lambda: dict(params_a=(net_np(), "params"), params_b=(net_np(), "params"))),
        ("equivalence", "equivalent", lambda: dict(params_a=(net_np(), "params"), params_b=(net_np(), "params"), atol=(1e-6, "nonneg"))),
        ("equivalence", "param_jacobian", lambda: dict(params=(net_np(), "params"), X=(Xd()[:, :2], A), alpha=(0.0, "slope"))),
        ("equivalence", "jacobian_rank", lambda: dict(params=(net_np(), "params"), X=(Xd()[:, :2], A), rel_tol=(1e-9, RA), alpha=(0.0, "slope"))),
        ("equivalence", "region_edges", lambda: dict(params=(net_np(), "params"), regions=(regs(), "list"), domain=((-1, 1), "list"), alpha=(0.0, "slope"))),
        ("equivalence", "lemma21_lengths", lambda: dict(edges=(E.region_edges(net_np(), regs()), "list"))),
        ("equivalence", "greedy_layers", lambda: dict(regions=(regs(), "list"), edges=(E.region_edges(net_np(), regs()), "list"), max_order=(12, C))),
        ("equivalence", "linear_regions_2d", lambda: dict(params=(net_np(), "params"), domain=((-1, 1), "list"), alpha=(0.0, "slope"))),
        ("equivalence", "check_general", lambda: dict(params=(net_np(), "params"), domain=((-1, 1), "list"), max_products=(1 << 10, C))),
        ("equivalence", "check_transparent", lambda: dict(params=(net_np(), "params"), domain=((-1, 1), "list"), n_samples=(200, C), seed=(0, SE))),
        ("equivalence", "identifiable_network", lambda: dict(widths=([2, 2, 1], "widths"), seed=(0, SE), domain=((-1, 1), "list"), max_tries=(500, C))),
        ("equivalence", "recover", lambda: dict(f=(lambda X, net=E.identifiable_network((2, 2, 2, 1), 1): E.forward(net, X)[:, 0], "callable"), input_dim=(2, C), domain=((-1, 1), "list"),
                                                  seed=(1, SE), max_layers=(4, C), max_attempts=(5, C))),
        ("equivalence", "jacobian_deficit", lambda: dict(params=(net_np(), "params"), X=(Xd()[:, :2], A), rel_tol=(1e-9, RA))),
        ("equivalence", "dependency_paths", lambda: dict(params=(net2(), "params"), domain=((-1, 1), "list"))),
        ("equivalence", "flip_sets", lambda: dict(params=(net_np(), "params"), domain=((-1, 1), "list"), rel_tol=(1e-9, RA),
                                                    max_width=(16, C))),
        ("equivalence", "one_layer_network", lambda: dict(widths=([2, 3, 1], "widths"), seed=(0, SE), domain=((-1, 1), "list"))),
        ("equivalence", "recover_one_hidden_layer", lambda: dict(f=(lambda X, net=E.one_layer_network([2, 2, 1], 0): E.forward(net, X)[:, 0], "callable"),
                                                                   input_dim=(2, C), domain=((-1, 1), "list"), seed=(0, SE), n_lines=(10, C))),
        ("equivalence", "CountingOracle.__call__", lambda: dict(self=(E.CountingOracle(lambda X: X[:, 0]), None), X=(Xd()[:, :2], "batch"))),
        ("equivalence", "counterexample", lambda: dict(name=("dead_neuron", "choice"), delta=(0.1, RE))),
        ("equivalence", "CountingOracle", lambda: dict(f=(lambda X: X[:, 0], "callable"))),
        # nets
        ("nets", "stacked_forward", lambda: dict(weights=(list(lib["nets"].BatchedMLP([3, 4, 2], seeds=[0, 1]).weights), "list"),
                                                  biases=(list(lib["nets"].BatchedMLP([3, 4, 2], seeds=[0, 1]).biases), "list"),
                                                  X=(torch.randn(5, 3), "batch"), activation=(torch.tanh, "callable"))),
        ("nets", "activate", lambda: dict(z=(Xt(), "elementwise"), activation=("leaky_relu", "choice"), negative_slope=(0.01, "slope"))),
        ("nets", "init_mlp", lambda: dict(widths=([2, 3, 1], "widths"), seed=(0, SE), scheme=("he", "choice"), scale=(1.0, "nonneg"))),
        ("nets", "mlp_forward", lambda: dict(params=(net_t(), "params"), X=(Xt(), "batch"), activation=("leaky_relu", "choice"),
                                              negative_slope=(0.01, "slope"))),
        ("nets", "permute_hidden", lambda: dict(params=(net_t(), "params"), layer=(0, NI), perm=(t([2, 0, 1]), "int_array"))),
        ("nets", "rescale_hidden", lambda: dict(params=(net_t(), "params"), layer=(0, NI), scales=(t([1.0, 2.0, 0.5]), A))),
        ("nets", "BatchedMLP", lambda: dict(widths=([2, 3, 1], "widths"), n_models=(2, C), scheme=("he", "choice"), scale=(1.0, "nonneg"),
                                             activation=("relu", "choice"), negative_slope=(0.01, "slope"))),
        ("nets", "BatchedMLP.forward", lambda: dict(self=(bm(), None), X=(Xt(), "batch"))),
        ("nets", "BatchedMLP.model_params", lambda: dict(self=(bm(), None), m=(1, NI))),
        ("nets", "as_float64_params", lambda: dict(params=(net_np(), "params"))),
        ("nets", "as_float64_inputs", lambda: dict(X=(Xd()[:, :2], A), d0=(2, C))),
        ("nets", "leaky_np", lambda: dict(U=(Xd(), "elementwise"), alpha=(0.1, "slope"))),
        ("nets", "forward_f64", lambda: dict(params=(net_np(), "params"), X=(Xd()[:, :2], A), alpha=(0.1, "slope"))),
        ("nets", "preactivations_f64", lambda: dict(params=(net_np(), "params"), X=(Xd()[:, :2], A), alpha=(0.1, "slope"))),
        ("nets", "activation_patterns", lambda: dict(params=(net_np(), "params"), X=(Xd()[:, :2], A), alpha=(0.1, "slope"))),
        ("nets", "check_leak", lambda: dict(alpha=(0.1, "slope"))),
        # train
        ("train", "mse_per_model", lambda: dict(out=(torch.randn(2, 8, 1, generator=g), A), y=(torch.randn(8, 1, generator=g), "array_nd"))),
        ("train", "logistic_per_model", lambda: dict(out=(torch.randn(2, 8, 1, generator=g), A), y=(ypm()[:, None], "array_nd"))),
        ("train", "cross_entropy_per_model", lambda: dict(out=(torch.randn(2, 8, 3, generator=g), A), y=(torch.arange(8) % 3, "labels"))),
        ("train", "make_optimizer", lambda: dict(params=(list(bm().parameters()), "list"), optimizer=("sgd", "choice"), lr=(0.1, RA),
                                                  momentum=(0.5, "fraction"), weight_decay=(0.0, "nonneg"))),
        ("train", "train_full_batch", lambda: dict(model=(bm(), "model"), X=(Xt(), A), y=(ypm(), "array_nd"), loss_fn=(T.logistic_per_model, "callable"),
                                                    steps=(3, C), lr=(0.1, RA), optimizer=("sgd", "choice"), momentum=(0.5, "fraction"),
                                                    weight_decay=(0.0, "nonneg"), log_every=(1, C), progress=(False, None))),
        ("train", "train_minibatch", lambda: dict(model=(bm(), "model"), X=(Xt(), A), y=(ypm(), A), loss_fn=(T.logistic_per_model, "callable"),
                                                   epochs=(2, C), batch_size=(4, C), lr=(0.1, RA), seed=(0, SE), optimizer=("sgd", "choice"),
                                                   momentum=(0.5, "fraction"), weight_decay=(0.0, "nonneg"), progress=(False, None))),
        # results
        ("results", "provenance", lambda: dict(seeds=([0, 1], "list"), wall_time_s=(1.0, "nonneg"), scale=("quick", "choice"))),
        ("results", "results_path", lambda: dict(chapter=("01_x", "str"), scale=("full", "choice"), root=(root, None))),
        ("results", "save_results", lambda: dict(chapter=("01_x", "str"), metrics=({"a": 1.0}, "dict"), seeds=([0], "list"),
                                                  wall_time_s=(1.0, "nonneg"), root=(root, None))),
        ("results", "load_results", lambda: dict(chapter=("01_x", "str"), scale=("full", "choice"), root=(root, None))),
        ("results", "git_commit", lambda: dict(root=(root, None))),  # any folder: 'unknown' outside a repository
        ("results", "dirty_allowed", lambda: dict(allow_dirty=(True, None))),
        ("results", "require_clean_tree", lambda: dict(allow_dirty=(True, None))),
        ("results", "format_value", lambda: dict(value=(1.5, None), digits=(3, NI))),
        ("results", "markdown_table", lambda: dict(header=(["a", "b"], "list"), rows=([[1, 2.0]], "list"), digits=(3, NI))),
        ("results", "paper_vs_ours_markdown", lambda: dict(rows=([{"quantity": "acc", "paper": 0.9, "this_run": 0.91}], "list"), digits=(3, NI))),
        ("results", "paper_vs_ours", lambda: dict(rows=([{"quantity": "acc", "paper": 0.9}], "list"), digits=(3, NI))),
        # scale
        ("scale", "seed", lambda: dict(i=(0, NI))),
        ("scale", "as_device", lambda: dict(device=("cpu", "choice"), name=("device", None))),  # name: a label for messages
        ("scale", "model_device", lambda: dict(model=(bm(), "model"))),
        ("scale", "on_device", lambda: dict(model=(bm(), "model"), device=("cpu", "choice"))),
        ("scale", "seeds", lambda: dict(n=(3, C))),
        ("scale", "set_threads", lambda: dict(n=(1, C))),
        ("scale", "ChapterScales", lambda: dict(chapter=("how_to_read", "str"), quick=(1, None), full=(2, None), paper=(3, None))),
        ("scale", "banner", lambda: dict(chapter=(scales(), "model"))),
        # pruning
        ("pruning", "best_cell_entry", lambda: dict(cell=({"per_parent": [(3, 2), (2, 5), (2, 7)]}, "dict"))),
        ("pruning", "wilson_interval", lambda: dict(successes=(3, NI), trials=(10, C), z=(1.96, RA))),
        ("pruning", "wide_pruning_cell", lambda: dict(n=(2, C), width=(3, C), parents=(2, C), epochs=(2, C), finetune_epochs=(1, NI),
                                                       alpha=(0.1, "slope"), lr=(0.025, RA), seed=(0, SE))),
        ("pruning", "wide_pruning_table", lambda: dict(widths=([3], "widths"), ns=([2], "widths"), parents=(2, C), epochs=(2, C),
                                                        finetune_epochs=(1, NI), seed_of=(lambda n, w: 0, "callable"),
                                                        alpha=(0.1, "slope"), lr=(0.025, RA), progress=(False, None))),
        ("pruning", "MaskedMLP.forward", lambda: dict(self=(masked(), None), X=(t(Xb(), dtype=torch.float32), "batch"))),
        ("pruning", "MaskedMLP.select", lambda: dict(self=(masked(), None), index=(t([1]), "int_array"), device=("cpu", "device"))),
        ("pruning", "MaskedMLP.assign", lambda: dict(self=(masked(), None), rows=(t([1]), "int_array"),
                                                       other=(masked().select([0]), "model"))),
        ("pruning", "PrunableCNN.forward", lambda: dict(self=(cnn(), None), x=(Ximg(), "batch"))),
        ("pruning", "MaskedMLP", lambda: dict(n_in=(2, C), width=(3, C), depth=(2, C), n_nets=(2, C), alpha=(0.1, "slope"), seed=(0, SE),
                                               device=("cpu", "device"))),
        ("pruning", "fit_masked", lambda: dict(model=(masked(), "model"), X=(t(Xb(), dtype=torch.float32), A),
                                                y=(t([0.0, 1.0, 1.0, 0.0]), "array_nd"), epochs=(2, C), lr=(0.025, RA))),
        ("pruning", "architecture", lambda: dict(mask=(torch.ones(2, 3), A), linear=(torch.zeros(2, dtype=torch.bool), None), n_in=(2, C))),
        ("pruning", "pruned_network", lambda: dict(model=(masked(), "model"), net=(0, NI))),
        ("pruning", "removal_candidates", lambda: dict(mask=(torch.ones(2, 3), A), linear=(torch.zeros(2, dtype=torch.bool), None))),
        ("pruning", "deep_prune", lambda: dict(n=(2, C), width=(3, C), depth=(1, C), trainings=(2, C), prunings=(1, C), epochs=(2, C),
                                                finetune_epochs=(1, NI), alpha=(0.1, "slope"), lr=(0.025, RA), seed=(0, SE),
                                                device=("cpu", "device"))),
        ("pruning", "architecture_size", lambda: dict(arch=((2, 3, 1), "list"))),
        ("pruning", "parity_bound_ok", lambda: dict(arch=((2, 3, 1), "list"))),
        ("pruning", "loss_plateaus", lambda: dict(curve=(np.full(30, 0.5), A), window=(2, C), rel_tol=(0.02, RA),
                                                   min_length=(3, C), floor=(0.05, RE))),
        ("pruning", "PrunableCNN", lambda: dict(in_channels=(1, C), image_size=(8, C), channels=(4, C), classes=(3, C), seed=(0, SE))),
        ("pruning", "as_images", lambda: dict(X=(torch.randn(3, 64, generator=g), A), image_size=(8, C))),
        ("pruning", "train_cnn", lambda: dict(model=(cnn(), "model"), X=(Ximg(), A), y=(y3(), "labels"), epochs=(1, C), batch_size=(4, C),
                                               lr=(0.01, RA), momentum=(0.9, "fraction"), weight_decay=(1e-4, "nonneg"), seed=(0, SE))),
        ("pruning", "evaluate", lambda: dict(model=(cnn(), "model"), X=(Ximg(), A), y=(y3(), "labels"), batch_size=(5, C))),
        ("pruning", "magnitude_prune", lambda: dict(model=(cnn(), "model"), fraction_removed=(0.5, "fraction"))),
        ("pruning", "channel_prune", lambda: dict(model=(cnn(), "model"), X=(Ximg(), A), y=(y3(), "labels"), X_test=(Ximg(), A),
                                                   y_test=(y3(), "labels"), finetune_epochs=(1, NI), min_accuracy=(0.0, "nonneg"))),
        # maxmargin
        ("maxmargin", "orthogonally_separable_gaussian", lambda: dict(n=(20, C), d=(3, C), seed=(0, SE))),
        ("maxmargin", "is_orthogonally_separable", lambda: dict(X=(Xpm()[0], A), y=(Xpm()[1], "array"), tol=(0.0, "nonneg"))),
        ("maxmargin", "max_margin", lambda: dict(X=(Xpm()[0][Xpm()[1] > 0], A))),
        ("maxmargin", "pm_max_margin", lambda: dict(X=(Xpm()[0], A), y=(Xpm()[1], A))),
        ("maxmargin", "extremal_sectors", lambda: dict(X=(Xpm()[0], A), y=(Xpm()[1], A))),
        ("maxmargin", "sector_is_feasible", lambda: dict(X=(Xpm()[0], A), sigma=(np.sign(Xpm()[0] @ wp()), A))),
        ("maxmargin", "G_value", lambda: dict(W=(Wm(), A), X=(Xpm()[0], A), y=(Xpm()[1], A))),
        ("maxmargin", "extremal_directions", lambda: dict(X=(Xpm()[0], A), y=(Xpm()[1], A), n_starts=(20, C), seed=(0, SE),
                                                            max_iter=(50, C))),
        ("maxmargin", "Table31CNN.features", lambda: dict(self=(MM.Table31CNN(image_size=8), None), X=(Ximg(), "batch"))),
        ("maxmargin", "Table31CNN.forward", lambda: dict(self=(MM.Table31CNN(image_size=8), None), X=(Ximg(), "batch"))),
        ("maxmargin", "activation_patterns", lambda: dict(W=(Wm(), A), X=(Xpm()[0], A))),
        ("maxmargin", "default_init", lambda: dict(shapes=([(4, 3), (1, 4)], "list"), n_models=(2, C), seed=(0, SE), scale=(0.1, "nonneg"))),
        ("maxmargin", "balanced_init", lambda: dict(n_models=(2, C), width=(4, C), d=(3, C), lam=(0.1, RA), seed=(0, SE))),
        ("maxmargin", "two_layer_forward", lambda: dict(params=(mm_params(), "list"), X=(t(Xpm()[0]), A))),
        ("maxmargin", "residual_forward", lambda: dict(params=(MM.default_init(MM.residual_shapes(3, 4, 3), 2, 0, 0.1), "list"), X=(t(Xpm()[0]), A))),
        ("maxmargin", "train_adam", lambda: dict(model=(MM.Table31CNN(image_size=8), "model"), X=(Ximg(), A), y=(torch.tensor([1.0, -1.0] * 6), A),
                                                  epochs=(1, C), batch_size=(4, C), lr=(1e-3, RA), seed=(0, SE), progress=(False, None))),
        ("maxmargin", "residual_shapes", lambda: dict(d=(3, C), width=(4, C), depth=(2, C))),
        ("maxmargin", "train_sgd", lambda: dict(forward=(MM.two_layer_forward, "callable"), params=(mm_params(), "list"), X=(t(Xpm()[0]).expand(2, -1, -1), A),
                                                 y=(t(Xpm()[1]).expand(2, -1), A), lr=(0.1, RA), batch_size=(5, C), epochs=(2, NI), seed=(0, SE),
                                                 progress=(False, None))),
        ("maxmargin", "log_loss", lambda: dict(forward=(MM.two_layer_forward, "callable"), params=(mm_params(), "list"),
                                                X=(t(Xpm()[0]).expand(2, -1, -1), A), y=(t(Xpm()[1]).expand(2, -1), A))),
        ("maxmargin", "train_normalized_gd", lambda: dict(forward=(MM.two_layer_forward, "callable"), params=(mm_params(), "list"),
                                                           X=(t(Xpm()[0]).expand(2, -1, -1), A), y=(t(Xpm()[1]).expand(2, -1), A), schedule=(((0.01, 3),), "list"),
                                                           progress=(False, None))),
        ("maxmargin", "neuron_alignment", lambda: dict(W=(Wm(), A), a=(am(), "array_nd"), w_plus=(wp(), A), w_minus=(wm(), A), mode=("respective", "choice"))),
        ("maxmargin", "theorem_residuals", lambda: dict(W=(Wm(), A), a=(am(), "array_nd"), w_plus=(wp(), A), w_minus=(wm(), A))),
        ("maxmargin", "gamma_star", lambda: dict(w_plus=(wp(), A), w_minus=(wm(), A))),
        ("maxmargin", "predicted_function", lambda: dict(X=(Xpm()[0], A), w_plus=(wp(), A), w_minus=(wm(), A))),
        ("maxmargin", "normalized_output", lambda: dict(W=(Wm(), A), a=(am(), "array_nd"), X=(Xpm()[0], A))),
        ("maxmargin", "norm_split", lambda: dict(W=(Wm(), A), a=(am(), "array_nd"))),
        ("maxmargin", "top_singular_values", lambda: dict(W=(Wm(), A), k=(2, C))),
        ("maxmargin", "project_top2", lambda: dict(W=(Wm(), A))),
        ("maxmargin", "sign_split_share", lambda: dict(P=(MM.project_top2(Wm()), A), signs=(am(), "array_nd"), quantile=(0.5, "fraction"))),
        ("maxmargin", "Table31CNN", lambda: dict(image_size=(8, C), fc_scale=(0.05, RA), seed=(0, SE))),
        ("maxmargin", "two_layer_report", lambda: dict(W=(Wm(), A), a=(am(), "array_nd"), X=(Xpm()[0], A), y=(Xpm()[1], A), X_test=(Xpm()[0], A),
                                                        big=(0.1, "nonneg"))),
        # multiexit
        ("multiexit", "distillation_loss", lambda: dict(logits=(logits(), "list"), tau=(1.0, RA), teachers=("last", "choice"))),
        ("multiexit", "multiexit_objective", lambda: dict(logits=(logits(), "list"), y=(torch.arange(5) % 3, "labels"), distill=(True, None),
                                                           tau=(1.0, RA), teachers=("last", "choice"))),
        ("multiexit", "TemperatureAnnealer", lambda: dict(mu=(0.5, "fraction"), mult=(1.05, RA), tau0=(1.0, RA), n_models=(1, C))),
        ("multiexit", "MultiExitCNN", lambda: dict(in_ch=(1, C), widths=((4, 4), "widths"), strides=((1, 2), "widths"), n_classes=(3, C),
                                                    seeds=((0,), "list"))),
        ("multiexit", "digits_protocol", lambda: dict(n_per_class=(4, C), n_val_per_class=(1, C), seed=(0, SE), pool_per_class=(10, C))),
        ("multiexit", "train_multiexit", lambda: dict(model=(mecnn(), "model"), X=(Ximg()[None], A), y=(y3()[None], "labels"),
                                                       distill=([True], "list"), cfg=(cfg_me(), "model"), teachers=("last", "choice"),
                                                       progress=(False, None))),
        ("multiexit", "exit_probs", lambda: dict(model=(mecnn(), "model"), X=(Ximg(), A))),
        ("multiexit", "per_exit_accuracy", lambda: dict(probs=(probs(), A), y=(y6(), "labels"), topk=(1, C))),
        ("multiexit", "budget_mode_accuracy", lambda: dict(val_acc=(np.array([[50.0, 60.0]]), A), test_acc=(np.array([[55.0, 65.0]]), A))),
        ("multiexit", "anytime_mode_accuracy", lambda: dict(probs=(probs(), A), y=(y6(), "labels"), topk=(1, C))),
        ("multiexit", "mean_ci95", lambda: dict(a=(np.array([[1.0, 2.0], [2.0, 3.0]]), "array_nd"), axis=(0, "axis"))),
        ("multiexit", "time_inference", lambda: dict(model=(mecnn(), "model"), x=(Ximg()[:1], A), mode=("anytime", "choice"), k=(2, C), n_runs=(2, C))),
        # mae
        ("mae", "gaussian_entropy", lambda: dict(d=(2, C))),
        ("mae", "gaussian_logpdf", lambda: dict(x=(Xt(), "elementwise"), mu=(torch.zeros(2), "array_nd"), logvar=(torch.zeros(2), "array_nd"))),
        ("mae", "kl_std_normal", lambda: dict(mu=(Xt(), "elementwise"), logvar=(torch.zeros(2), "array_nd"))),
        ("mae", "bivariate_gaussian_mi", lambda: dict(rho=(0.5, "corr"))),
        ("mae", "infomax_bound_bivariate", lambda: dict(rho=(0.5, "corr"), a=(0.5, RE), s2=(1.0, RA))),
        ("mae", "infomax_bound_bivariate_mc", lambda: dict(rho=(0.5, "corr"), a=(0.5, RE), s2=(0.75, RA), n_samples=(10, C), seed=(0, SE))),
        ("mae", "z_grid", lambda: dict(G=(51, C), lim=(7.0, RA))),
        ("mae", "NormalMAE", lambda: dict(seeds=([0], "list"), hidden=(4, C))),
        ("mae", "FiniteMAE", lambda: dict(seeds=([0], "list"), q_x=(torch.full((4,), 0.25), A), hidden=(4, C), k=(1, C))),
        ("mae", "train_mae", lambda: dict(model=(fmae(), "model"), targets=([1.0], "targets"), C=(1.0, "nonneg"), steps=(2, C), lr=(1e-3, RA),
                                           batch=(8, C), seed=(0, SE), log_every=(1, C))),
        ("mae", "infomax_estimate", lambda: dict(model=(nmae(), "model"), n_samples=(100, C), seed=(0, SE))),
        ("mae", "normal_exact", lambda: dict(model=(nmae(), "model"), G=(51, C), lim=(7.0, RA), Gx=(41, C), x_lim=(6.0, RA))),
        ("mae", "finite_exact", lambda: dict(model=(fmae(), "model"), G=(51, C), lim=(7.0, RA), Q=(8, C))),
        ("mae", "sir_sample", lambda: dict(model=(fmae(), "model"), n_samples=(10, C), k=(2, C), seed=(0, SE))),
        ("mae", "word_match_matrix", lambda: dict(sentences=(["a b", "a c d"], "list"))),
        ("mae", "sample_reconstructions", lambda: dict(model=(fmae(), "model"), x=(1, NI), n=(2, C), seed=(0, SE))),
        ("mae", "interpolate", lambda: dict(model=(fmae(), "model"), x_a=(0, NI), x_b=(1, NI), n=(3, C))),
        ("mae", "split_sentences", lambda: dict(texts=(["The film was fun. I liked it."], "list"), max_len=(8, C))),
        ("mae", "build_vocab", lambda: dict(sentences=([["a", "b"], ["a", "c"]], "list"), size=(10, C))),
        ("mae", "encode_sentences", lambda: dict(sentences=([["a", "b"], ["a", "c"]], "list"), vocab=(MA.build_vocab([["a", "b"], ["a", "c"]], 10), "model"),
                                                  max_tokens=(4, C))),
        ("mae", "SequenceMAE", lambda: dict(tokens=(torch.tensor([[2, 3, 0], [3, 2, 0]]), "int_array"), vocab_size=(5, C), latent_dim=(2, C),
                                             emb=(4, C), hidden=(4, C), k=(1, C), seed=(0, SE))),
        # leaky_1d
        ("leaky_1d", "alternating_slopes", lambda: dict(changes=(3, NI), alpha=(0.1, "slope"))),
        ("leaky_1d", "min_width_1d", lambda: dict(changes=(3, NI), alpha=(0.1, "slope"))),
        ("leaky_1d", "alternating_network", lambda: dict(changes=(3, C), alpha=(0.1, "slope"), width=(3, C))),
        ("leaky_1d", "lift", lambda: dict(params=(LK.alternating_network(3, 0.1), "params"), direction=(np.array([0.5, 0.5]), A),
                                           offset=(1.0, RE))),
        ("mae", "encoder_posterior_kl", lambda: dict(model=(fmae(), "model"), n_inner=(20, C), G=(51, C), lim=(7.0, RA), seed=(0, SE))),
        ("mae", "restart_seeds", lambda: dict(seeds=([0, 1], "list"), rows=(2, C), restarts=(2, C))),
        ("mae", "training_objective", lambda: dict(model=(fmae(), "model"), targets=([1.0], "targets"), C=(1.0, "nonneg"), n_samples=(50, C),
                                                    seed=(0, SE))),
        ("mae", "best_of_restarts", lambda: dict(objective=(np.array([3.0, 1.0, 2.0, 0.0]), A), restarts=(2, C))),
        ("mae", "reconstruction_rates", lambda: dict(model=(fmae(), "model"), match=(torch.eye(4, dtype=torch.float64), A), Q=(4, C),
                                                      chunk_size=(2, C), seed=(0, SE))),
        ("mae", "decode_tokens", lambda: dict(row=(torch.tensor([2, 3, 0]), "int_array"), vocab=(["<pad>", "<eos>", "a", "b"], "list"))),
        ("mae", "sequence_reconstruction_rates", lambda: dict(model=(smae(), "model"), x=(torch.tensor([[2, 3, 0], [3, 2, 0]]), "int_array"),
                                                               seed=(0, SE), greedy=(False, None))),
        # annulus (chapter 07)
        ("annulus", "sum_zero_basis", lambda: dict(n=(2, C))),
        ("annulus", "expanded_simplex", lambda: dict(n=(2, C))),
        ("annulus", "inradius", lambda: dict(vertices=(lib["annulus"].expanded_simplex(2), A))),
        ("annulus", "region_radii", lambda: dict(params=(ring(), "params"), center=(np.zeros(2), "array_nd"), negative_slope=(0.1, "slope"))),
        ("annulus", "expanded_simplex_facets", lambda: dict(n=(3, C))),
        ("annulus", "ball_volume", lambda: dict(n=(3, C), r=(1.0, "nonneg"))),
        ("annulus", "relu_sum_net", lambda: dict(W=(np.eye(2), A), b=(np.zeros(2), A), c=(1.0, RE))),
        ("annulus", "simplex_net", lambda: dict(n=(2, C), c=(1.0, RA))),
        ("annulus", "cross_net", lambda: dict(n=(2, C), L=(1.0, RA))),
        ("annulus", "lines_net", lambda: dict(angles=(np.array([0.0, 120.0, 240.0]), A), offsets=(np.full(3, 0.1), A), c=(1.0, RE))),
        ("annulus", "quad_net", lambda: dict(W2x2=(np.eye(2), A), a=(np.array([2.0, 2.0]), A), beta=(np.array([0.5, 0.5]), A), far=(10.0, RA))),
        ("annulus", "region_polygon", lambda: dict(params=(ring(), "params"), center=(np.zeros(2), "array_nd"), negative_slope=(0.1, "slope"))),
        ("annulus", "polygon_radii", lambda: dict(P=(np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]]), A), center=(np.zeros(2), "array_nd"))),
        ("annulus", "escape_ray", lambda: dict(params=([(np.eye(2), np.zeros(2)), (-np.ones((1, 2)), np.ones(1))], "params"))),
        ("annulus", "exit_distances", lambda: dict(params=(ring(), "params"), directions=(np.eye(2), A), center=(np.zeros(2), "array_nd"),
                                                  negative_slope=(0.1, "slope"))),
        ("annulus", "crossing_units", lambda: dict(params=(ring(), "params"), points=(np.ones((3, 2)), A), center=(np.zeros(2), "array_nd"))),
        ("annulus", "relu_sum_polytope", lambda: dict(W=(lib["annulus"].simplex_net(2)[0][0], A), b=(np.zeros(3), A))),
        ("annulus", "polytope_radii", lambda: dict(W=(lib["annulus"].simplex_net(2)[0][0], A), b=(np.zeros(3), A))),
        ("annulus", "polish_ratio", lambda: dict(W=(lib["annulus"].simplex_net(2)[0][0] + 0.05, A), b=(np.zeros(3), A),
                                                max_steps=(1, C), delta=(0.05, RA))),
        # annulus_training (chapter 07, higher dimensions)
        ("annulus_training", "ball_vs_shell", lambda: dict(n_dim=(3, C), n_points=(8, C), r1=(1.0, RA), r2=(1.5, RA), r3=(2.0, RA),
                                                          rng=(rng(), "model"), n_sets=(2, C))),
        ("annulus_training", "LeakEnsemble", lambda: dict(widths=([3, 4, 1], "widths"), seeds=([0, 1], "list"), slopes=(np.array([0.0, 0.1]), A))),
        ("annulus_training", "LeakEnsemble.forward", lambda: dict(self=(leak(), None), X=(Xs(), "batch"))),
        ("annulus_training", "train_ball_vs_shell", lambda: dict(X=(Xs(), A), y=(ys(), "array"), slopes=(np.array([0.0, 0.1]), A),
                                                                bce=([True, False], "list"), epochs=(2, C), batch_size=(4, C), lr=(0.01, RA),
                                                                seed=(0, SE), net_seeds=([0, 1], "list"))),
        ("annulus_training", "sign_accuracy", lambda: dict(model=(leak(), "model"), X=(Xs(), A), y=(ys(), "array"))),
        # linear_regions (chapter 08)
        ("linear_regions", "pattern_string", lambda: dict(pattern=([True, False], "list"))),
        ("linear_regions", "polygon_area", lambda: dict(P=(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), A))),
        ("linear_regions", "local_affine", lambda: dict(params=(net_np(), "params"), X=(Xd()[:, :2], A), alpha=(0.0, "slope"))),
        ("linear_regions", "regions_2d", lambda: dict(params=(net_np(), "params"), box=((-1.0, 1.0, -1.0, 1.0), "list"), alpha=(0.0, "slope"),
                                                       min_area=(1e-14, "nonneg"))),
        ("linear_regions", "regions_1d", lambda: dict(params=(net1d(), "params"), interval=((-1.0, 1.0), "list"), alpha=(0.0, "slope"),
                                                       min_length=(1e-12, "nonneg"))),
        ("linear_regions", "arrangement_bound", lambda: dict(k=(3, NI), n=(2, NI))),
        ("linear_regions", "region_bound", lambda: dict(widths=([2, 3, 3], "widths"))),
        ("linear_regions", "grid_pattern_count", lambda: dict(params=(net_np(), "params"), box=((-1.0, 1.0, -1.0, 1.0), "list"), p=(5, C),
                                                               alpha=(0.0, "slope"))),
        ("linear_regions", "zero_sets_2d", lambda: dict(regions=(lib["linear_regions"].regions_2d(net_np(), (-1, 1, -1, 1)), "list"), layer=(1, C))),
        ("linear_regions", "boundary_segments_2d", lambda: dict(regions=(lib["linear_regions"].regions_2d(net_np(), (-1, 1, -1, 1)), "list"),
                                                                 output=(0, NI))),
        ("linear_regions", "boundary_crossings_2d", lambda: dict(regions=(lib["linear_regions"].regions_2d(net_np(), (-1, 1, -1, 1)), "list"),
                                                                  layer=(1, C), output=(0, NI), tol=(1e-9, "nonneg"))),
        ("linear_regions", "torch_default_params", lambda: dict(widths=([2, 3, 1], "widths"), seed=(0, SE))),
        ("linear_regions", "torch_default_batched", lambda: dict(widths=([2, 3, 1], "widths"), seeds=([0, 1], "list"), leak=(0.0, "slope"))),
        ("linear_regions", "batched_params", lambda: dict(model=(lib["linear_regions"].torch_default_batched([2, 3, 1], [0]), "model"))),
        ("linear_regions", "circle_annulus", lambda: dict(n=(10, C), seed=(0, SE))),
        # skip_connections (chapter 10, part C)
        ("skip_connections", "vgg_layers", lambda: dict(depth=(11, "choice"), mp2conv=(False, None), fc=(128, C))),
        ("skip_connections", "activation", lambda: dict(z=(Xt(), "elementwise"), name=("sigmoid", "choice"), gamma=(20.0, RA))),
        ("skip_connections", "he_truncated_normal", lambda: dict(shape=((3, 4), None), fan_in=(4, C), gen=(torch.Generator().manual_seed(0), None))),
        ("skip_connections", "SkipMLP", lambda: dict(widths=([2, 4, 3, 3], "widths"), seeds=([0, 1], "list"), n_skip=(3, NI),
                                                      activation=("sigmoid", "choice"), gamma=(20.0, RA))),
        ("skip_connections", "SkipMLP.forward", lambda: dict(self=(skm(), None), X=(Xt(), "batch"))),
        ("skip_connections", "SkipMLP.psi", lambda: dict(self=(skm(), None), X=(Xt(), "batch"))),
        ("skip_connections", "SkipMLP.hidden", lambda: dict(self=(skm(), None), X=(Xt(), "batch"))),
        ("skip_connections", "SkipCNN", lambda: dict(layers=((("conv", 2, 3, 1), ("pool",), ("fc", 3)), "list"), in_shape=((1, 8, 8), "list"),
                                                      n_out=(3, C), seed=(0, SE), n_skip=(4, NI), activation=("softplus", "choice"), gamma=(20.0, RA))),
        ("skip_connections", "SkipCNN.forward", lambda: dict(self=(skc(), None), X=(Ximg(), "batch"))),
        ("skip_connections", "accuracy", lambda: dict(model=(skm(), "model"), X=(Xt(), A), y=(yt8(), "labels"), chunk=(4, C))),
        ("skip_connections", "random_shift", lambda: dict(X=(Ximg(), A), max_shift=(1, NI), gen=(torch.Generator().manual_seed(0), None))),
        ("skip_connections", "train_sgd", lambda: dict(model=(skm(), "model"), X=(Xt(), A), y=(yt8(), "labels"), epochs=(1, C), batch_size=(4, C),
                                                        lr=(0.1, RA), seed=(0, SE), train=("all", "choice"), momentum=(0.9, "fraction"),
                                                        nesterov=(True, None), milestones=((0.5, 0.75), "list"), track_accuracy=(False, None))),
        ("skip_connections", "psi_ranks", lambda: dict(model=(skm(), "model"), X=(Xt(), A))),
        ("skip_connections", "fit_readout", lambda: dict(model=(skm(), "model"), X=(Xt(), A), y=(yt8(), "labels"), margin=(1.0, "nonneg"),
                                                        max_iter=(20, C), chunk=(10, C))),
        ("skip_connections", "exact_readout", lambda: dict(model=(skm(), "model"), X=(Xt(), A), y=(yt8(), "labels"))),
        ("skip_connections", "filter_normalised_direction", lambda: dict(params=([torch.ones(3, 2), torch.ones(3)], "list"),
                                                                          gen=(torch.Generator().manual_seed(0), None))),
        ("skip_connections", "plane_losses", lambda: dict(model=(skm(), "model"), X=(Xt(), A), y=(yt8(), "labels"), span=(1.0, RA),
                                                           resolution=(3, C), seed=(0, SE), k=(1, NI))),
        ("skip_connections", "check_paper_config_step", lambda: dict(layers=((("conv", 2, 3, 1), ("fc", 3)), "list"), in_shape=((1, 4, 4), "list"),
                                                                      n_out=(3, C), n_skip=(4, NI), batch=(2, C), seed=(0, SE))),
        ("skip_connections", "readout_sweep", lambda: dict(model=(skm(), "model"), X=(Xt(), A), y=(yt8(), "labels"), X_test=(Xt(), A),
                                                            y_test=(yt8(), "labels"), sizes=([2, 3], "widths"), k=(1, NI))),
        ("skip_connections", "readout_descent", lambda: dict(model=(skm(), "model"), X=(Xt()[:3], A), y=(yt8()[:3], "labels"), k=(1, NI),
                                                              target=(0.01, RA), n_points=(3, C), seed=(0, SE))),  # 3 skip neurons, N = 3
        # skip_connections: the paper path of Tables 4.2-4.5 (a VGG11 at CIFAR's shape takes ~2 s to initialise)
        ("skip_connections", "SkipDenseNet", lambda: dict(in_shape=((3, 8, 8), "list"), n_out=(3, C), seed=(0, SE), n_skip=(4, NI),
                                                           activation=("softplus", "choice"), gamma=(20.0, RA), growth=(2, C),
                                                           blocks=((1, 1, 1, 1), "list"))),
        ("skip_connections", "paper_model", lambda: dict(arch=("vgg11", "choice"), in_shape=((3, 32, 32), "list"), n_out=(10, C),
                                                          seed=(0, SE), n_skip=(4, NI), activation=("sigmoid", "choice"))),
        ("skip_connections", "flip_crop", lambda: dict(X=(Ximg(), A), gen=(torch.Generator().manual_seed(0), None), pad=(2, NI),
                                                        p_flip=(0.5, "fraction"))),
        ("skip_connections", "table_runs", lambda: dict(table=("4.3", "choice"), archs=(("vgg11", "densenet121"), "list"),
                                                         activations=(("softplus",), "list"))),
        ("skip_connections", "table_markdown", lambda: dict(table=("4.3", "choice"), results=({}, "dict"), archs=(("vgg11",), "list"))),
        ("skip_connections", "run_table_row", lambda: dict(arch=("vgg11", "choice"), activation=("softplus", "choice"),
                                                            variant=("skip-SGD", "choice"), X=(X32(), A), y=(y4(), "labels"),
                                                            X_test=(X32(), A), y_test=(y4(), "labels"), seeds=([0], "list"),
                                                            epochs=(1, C), lr=(0.01, RA), batch_size=(4, C), augment=(False, None),
                                                            momentum=(0.9, "fraction"), chunk=(4, C), save_dir=(None, None))),
        ("skip_connections", "paper_rows_dir", lambda: dict(chapter=("optimization_landscape_skip_connections", "str"))),
        # network_comparison (chapter 08, comparisons)
        *_network_comparison_specs(lib["network_comparison"], C, SE, RA, A),
        # data
        # teacher_student_conv (chapter 09, Fig. 10's paper configuration)
        ("teacher_student_conv", "ConvNet", lambda: dict(channels=([2, 2], "widths"), classes=(3, C), image=((3, 8, 8), "list"),
                                                         kernel=(3, C), seed=(0, SE))),
        ("teacher_student_conv", "prune_channels", lambda: dict(net=(cnet(), "model"), ratio=(0.5, "fraction"))),
        ("teacher_student_conv", "make_student", lambda: dict(teacher=(cnet(), "model"), multi=(2, C), seed=(0, SE))),
        ("teacher_student_conv", "train_step", lambda: dict(teacher=(cnet(), "model"), student=(cnet(), "model"), x=(cimg(), A),
                                                            lr=(0.01, RA))),
        ("teacher_student_conv", "channel_best_correlations", lambda: dict(teacher=(cnet(), "model"), student=(cnet(), "model"),
                                                                           x=(cimg(), A))),
        # smoke (the paper-path smoke runs' shrinking rules)
        ("smoke", "smoke_count", lambda: dict(c=(5, NI))),
        ("smoke", "smoke_config", lambda: dict(config=(ME.CONFIGS.paper, None), chapter=("05_multi_exit", "str"),
                                               quick=(ME.CONFIGS.quick, None))),
        # landscape (chapter 10, parts A and B)
        ("landscape", "nr_rank", lambda: dict(A=(np.eye(3), A))),
        ("landscape", "digits_data", lambda: dict(n=(20, C), noise_std=(0.01, "nonneg"), seed=(0, SE))),
        ("landscape", "gaussian_points", lambda: dict(N=(4, C), d=(3, C), seed=(0, SE))),
        ("landscape", "random_labels", lambda: dict(N=(4, C), m=(3, C), seed=(0, SE))),
        ("landscape", "activate", lambda: dict(Z=(np.ones((2, 3)), "elementwise"), activation=("relu", "choice"), alpha=(0.1, "slope"))),
        ("landscape", "random_features", lambda: dict(X=(ls_X(), A), width=(5, C), activation=("sigmoid", "choice"), seed=(0, SE),
                                                       alpha=(0.1, "slope"))),
        ("landscape", "exact_fit", lambda: dict(F=(ls_X(), A), Y=(np.eye(3)[:, :2], A))),
        ("landscape", "triangular_features", lambda: dict(X=(ls_X(), A), a=(np.array([1.0, 0.3, 0.1, 0.2, 0.5]), A), scale=(10.0, RE),
                                                           beta=(1.0, RE), activation=("relu", "choice"))),
        ("landscape", "grad_sandwich", lambda: dict(params=(ls_sig(), "params"), X=(ls_X()[:, :2], A), Y=(np.ones((3, 2)), A), k=(1, C))),
        ("landscape", "backprop_gradient", lambda: dict(params=(ls_sig(), "params"), X=(ls_X()[:, :2], A), Y=(np.ones((3, 2)), A), k=(1, NI))),
        ("landscape", "tiny_cnn", lambda: dict(T1=(2, C), seed=(0, SE), T3=(3, C), n_out=(4, C), side=(8, C))),
        ("landscape", "cnn_feature_ranks", lambda: dict(model=(LS.tiny_cnn(2, 0, 3, 4), "model"), X=(ls_img(), A))),
        ("landscape", "train_square", lambda: dict(model=(LS.tiny_cnn(2, 0, 3, 4), "model"), X=(ls_img(), A), Y=(np.zeros((5, 4)), A),
                                                    steps=(2, C), lr=(1e-3, RA))),
        ("landscape", "layer_outputs", lambda: dict(params=(ls_net(), "params"), X=(ls_X(), A), alpha=(0.2, "slope"))),
        ("landscape", "cross_entropy_loss", lambda: dict(params=(ls_net(), "params"), X=(ls_X(), A), y=(ls_y(), "labels"), alpha=(0.2, "slope"))),
        ("landscape", "init_net", lambda: dict(widths=([5, 4, 2], "widths"), seed=(0, SE))),
        ("landscape", "train_ce_gd", lambda: dict(params=(ls_net(), "params"), X=(ls_X(), A), y=(ls_y(), "labels"), alpha=(0.2, "slope"),
                                                   lr=(0.1, RA), steps=(2, C))),
        ("landscape", "gradient_norm", lambda: dict(params=(ls_net(), "params"), X=(ls_X(), A), y=(ls_y(), "labels"), alpha=(0.2, "slope"))),
        ("landscape", "straight_line_losses", lambda: dict(params_a=(ls_net(), "params"), params_b=(ls_net(1), "params"), X=(ls_X(), A),
                                                            y=(ls_y(), "labels"), alpha=(0.2, "slope"), n_points=(3, C))),
        ("landscape", "yhat_scale", lambda: dict(m=(3, C), target=(0.1, RA))),
        ("landscape", "sublevel_path_with_info", lambda: dict(params_a=(ls_net(), "params"), params_b=(ls_net(1), "params"), X=(ls_X(), A),
                                                               y=(ls_y(), "labels"), alpha=(0.2, "slope"), points_per_stage=(3, C))),
        ("landscape", "sublevel_path", lambda: dict(params_a=(ls_net(), "params"), params_b=(ls_net(1), "params"), X=(ls_X(), A),
                                                     y=(ls_y(), "labels"), alpha=(0.2, "slope"), points_per_stage=(3, C))),
        ("landscape", "rank_repair_path", lambda: dict(X=(ls_X(), A), W=(np.tile(ls_X()[:2], (3, 1)), A), b=(np.tile([0.1, -0.2], 3), A),
                                                        Vout=(np.ones((2, 6)), A), alpha=(0.2, "slope"), seed=(0, SE), points_per_stage=(3, C))),
        ("landscape", "descent_path", lambda: dict(params=(LS.init_net([5, 8, 2], 0), "params"), X=(ls_X(), A), y=(ls_y(), "labels"),
                                                    alpha=(0.2, "slope"), target=(0.01, RA), n_points=(3, C))),
        # svals: an empty spectrum gives 0 (documented, pinned in tests/test_landscape.py), so its kind is "batch"
        ("landscape", "nr_threshold", lambda: dict(svals=(np.array([3.0, 1.0]), "batch"), shape=((2, 2), "list"))),
        ("landscape", "relu_layer_draws", lambda: dict(X=(ls_X(), A), width=(4, C), n_draws=(2, C), seed=(0, SE))),
        ("landscape", "conv_widths", lambda: dict(in_shape=((8, 8, 1), "list"), layers=([("conv", 3, 1, 0, 2), ("pool", 2, 2)], "list"))),
        ("landscape", "conv_matrix_1d", lambda: dict(W=(np.ones((2, 3)), A), n_in=(5, C), stride=(1, C))),
        ("landscape", "sigmoid_outputs", lambda: dict(params=(ls_sig(), "params"), X=(ls_X()[:, :2], A))),
        ("landscape", "sigmoid_mlp", lambda: dict(widths=([2, 3, 2], "widths"), seed=(0, SE))),
        ("landscape", "mlp_params", lambda: dict(model=(LS.sigmoid_mlp([2, 3, 2]), "model"))),
        ("landscape", "autograd_gradient", lambda: dict(params=(ls_sig(), "params"), X=(ls_X()[:, :2], A), Y=(np.ones((3, 2)), A),
                                                         k=(1, NI))),
        ("landscape", "global_minimum", lambda: dict(widths=([5, 4, 2], "widths"), X=(ls_X(), A), y=(ls_y(), "labels"), seed=(0, SE))),
        ("landscape", "leaky_inverse", lambda: dict(Z=(np.ones((2, 3)), "elementwise"), alpha=(0.2, "slope"))),
        ("landscape", "path_steps", lambda: dict(path=([ls_net(), ls_net(1)], "list"))),
        ("landscape", "copy_step_path", lambda: dict(X=(ls_cp(), A), W=(ls_cw(1), A), Vout=(np.ones((2, 6)), A), W_target=(ls_cw(2), A),
                                                      alpha=(0.2, "slope"), points_per_stage=(2, C))),
        ("landscape", "valley_descent_path", lambda: dict(params=(ls_net(), "params"), X=(ls_X(), A), y=(ls_y(), "labels"),
                                                           alpha=(0.2, "slope"), k=(1, C), target=(0.01, RA), seed=(0, SE),
                                                           points_per_stage=(2, C))),
        ("landscape", "wide_first_layer_path", lambda: dict(params_a=(ls_wide(0, [3]), "params"), params_b=(ls_wide(1, [3]), "params"),
                                                             X=(ls_X(), A), y=(ls_y(), "labels"), alpha=(0.2, "slope"), seed=(0, SE), points_per_stage=(2, C))),
        ("landscape", "wide_relu_path", lambda: dict(params_a=(ls_wide(), "params"), params_b=(ls_wide(1), "params"), X=(ls_X(), A),
                                                      y=(ls_y(), "labels"), alpha=(0.0, "slope"), seed=(0, SE), points_per_stage=(2, C))),
        # decision_regions (chapter 10, part D)
        ("decision_regions", "is_pyramidal", lambda: dict(widths=([2, 2, 2], "widths"))),
        ("decision_regions", "theorem_523_conditions", lambda: dict(params=(dr_net(), "params"), alpha=(0.1, "slope"))),
        ("decision_regions", "example_54", lambda: dict(alpha=(0.1, "slope"))),
        ("decision_regions", "width3_disconnected", lambda: dict(alpha=(0.1, "slope"))),
        ("decision_regions", "region_masks", lambda: dict(params=(dr_net(), "params"), X=(dr_pts(), A), alpha=(0.1, "slope"),
                                                           tol=(1e-9, "nonneg"))),
        ("decision_regions", "grid_points", lambda: dict(box=((-1, 1, -1, 1), "list"), res=(5, C))),
        ("decision_regions", "region_grid", lambda: dict(params=(dr_net(), "params"), box=((-1, 1, -1, 1), "list"), res=(5, C),
                                                          alpha=(0.1, "slope"), tol=(1e-9, "nonneg"))),
        ("decision_regions", "components", lambda: dict(mask=(np.eye(4, dtype=bool), A), connectivity=(8, "choice"))),
        ("decision_regions", "component_counts", lambda: dict(params=(dr_net(), "params"), box=((-1, 1, -1, 1), "list"), res=(5, C),
                                                               alpha=(0.1, "slope"), tol=(1e-9, "nonneg"), connectivity=(8, "choice"))),
        ("decision_regions", "exact_region", lambda: dict(params=(dr_net(), "params"), box=((-1, 1, -1, 1), "list"), alpha=(0.1, "slope"),
                                                           cls=(1, NI), tol=(1e-9, "nonneg"))),
        ("decision_regions", "exact_counts", lambda: dict(params=(dr_net(), "params"), box=((-1, 1, -1, 1), "list"), alpha=(0.1, "slope"),
                                                           tol=(1e-9, "nonneg"))),
        ("decision_regions", "agreement", lambda: dict(example=(DRM.example_53(), "model"), X=(dr_pts(), A))),
        ("decision_regions", "bend_points", lambda: dict(params=(dr_net(), "params"), alpha=(0.1, "slope"))),
        ("decision_regions", "bend_window", lambda: dict(params=(dr_net(), "params"), alpha=(0.1, "slope"), margin=(1.0, RA))),
        ("decision_regions", "islands", lambda: dict(n=(10, C), seed=(0, SE))),
        ("decision_regions", "xor_margin", lambda: dict(n=(10, C), seed=(0, SE))),
        ("decision_regions", "bands54", lambda: dict(n=(10, C), seed=(0, SE))),
        ("decision_regions", "train_nets", lambda: dict(X=(DRM.islands(20, 0)[0][None], A), y=(DRM.islands(20, 0)[1][None], "labels"),
                                                         hidden=([(2,)], "list"), seeds=([0], "list"), alpha=(0.1, "slope"), epochs=(1, C),
                                                         lr=(0.1, RA), momentum=(0.9, "fraction"), batch_size=(10, C), halve_every=(5, C))),
        # teacher_student (chapter 09); batch_size takes the "seed" kind (-1, 2.5, 'x'): None is a documented value (GD)
        *_teacher_student_specs(lib["teacher_student"], C, NI, SE, RA, RE, A),
        *_image_nets_specs(lib["image_nets"], C, SE, A),
        ("data", "synthetic_2d", lambda: dict(kind=("xor", "choice"), n=(20, C), seed=(0, SE), noise=(0.1, "nonneg"), test_fraction=(0.5, "fraction"))),
        ("data", "load_digits_split", lambda: dict(classes=([0, 1], "list"), test_fraction=(0.25, "fraction"), seed=(0, SE))),
        ("data", "smoke_online", lambda: dict(name=("mnist", "choice"), seed=(0, SE))),
        ("data", "make_mnist1d", lambda: dict(num_samples=(100, C), seed=(0, SE), cache=(False, None))),
        ("teacher_student_conv", "ConvNet.forward", lambda: dict(self=(cnet(), None), x=(cimg(), "shape_only"))),
        ("scale", "ChapterScales", lambda: dict(chapter=("distillation", "choice"), quick=(D.DistillConfig(), None),
                                                full=(D.DistillConfig(), None), paper=(D.DistillConfig(), None))),
        *_config_specs(),
    ]


# ----------------------------------------------------------------------------------------------
# configuration dataclasses (issue 37): every field of each, one at a time, from the defaults

#: (module, class) of every configuration dataclass of ``lib`` that a chapter builds its scales from
CONFIG_CLASSES = (("mae", "MAEConfig"), ("mae", "SentenceGrammar"), ("maxmargin", "InductiveBiasConfig"),
                  ("multiexit", "MultiExitConfig"), ("distill", "DistillConfig"),
                  ("teacher_student_conv", "CifarConfig"))
#: int fields where 0 is meaningful (no validation images... no pre-training): swept as "nonneg_int"
NONNEG_FIELDS = {"MultiExitConfig.n_val_per_class", "CifarConfig.pretrain_epochs"}
#: str fields that name one of a few choices (the others are free text)
CHOICE_FIELDS = {"MultiExitConfig.data", "InductiveBiasConfig.cnn_data", "DistillConfig.bias_source"}


def _field_kind(cls, name, value):
    key = f"{cls.__name__}.{name}"
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return "nonneg_int" if key in NONNEG_FIELDS else "count"
    if isinstance(value, float):
        return "cfg_float"
    if isinstance(value, str):
        return "choice" if key in CHOICE_FIELDS else "str"
    if isinstance(value, tuple):
        return "cfg_tuple"
    return None


def _config_specs():
    """One spec per configuration dataclass: the class called with its default values, a kind per field."""
    import dataclasses
    specs = []
    for module, name in CONFIG_CLASSES:
        cls = getattr(importlib.import_module(f"lib.{module}"), name)

        def factory(cls=cls):
            default = cls()
            return {f.name: (getattr(default, f.name), _field_kind(cls, f.name, getattr(default, f.name)))
                    for f in dataclasses.fields(cls)}
        specs.append((module, name, factory))
    return specs


# ----------------------------------------------------------------------------------------------
# arguments that must agree with another one, and degenerate values (issue 37)

def _t(fn):
    """``fn`` applied to a torch tensor's clone (so that the valid call's tensors stay untouched)."""
    return lambda v: fn(v.detach().clone())


def _zero_rows_of_negative_neurons(W):
    W = np.array(W, dtype=float)
    W[[1, 3]] = 0.0  # the neurons with a_j < 0 in the valid call (a = (1, -1, 0.5, -0.5, 1))
    return W


#: Per function, per argument: bad values that are valid on their own but do not agree with another
#: argument of the valid call (a transposed X for its labels, a mask of another depth...), or degenerate
#: ones (a zero direction divided by its norm, a NaN weight). Each is a function of the valid value (None
#: when the valid call leaves the argument at its default). Degenerate inputs with a defined answer
#: (``landscape.exact_fit`` with Y = 0, ``mae.word_match_matrix`` of empty sentences, a zero neuron in
#: ``maxmargin.neuron_alignment``, ``equivalence.equivalent`` of two architectures) are pinned by tests, not swept;
#: so is an extra trailing axis of length 1 in ``train``'s per-model losses (documented in ``_targets_like``).
MISMATCH = {
    "distill.gd_linear": {"X": {"transposed (d, n)": lambda v: np.asarray(v).T}, "y": {"one label short": lambda v: v[:-1]}},
    "distill.newton_in_span": {"X": {"transposed (d, n)": lambda v: np.asarray(v).T}, "y": {"one label short": lambda v: v[:-1]}},
    "pruning.architecture": {"mask": {"another depth than linear": lambda v: torch_ones(3, v.shape[1])},
                             "linear": {"another depth than mask": lambda v: torch_zeros_bool(3)}},
    "pruning.removal_candidates": {"mask": {"another depth than linear": lambda v: torch_ones(3, v.shape[1])},
                                   "linear": {"another depth than mask": lambda v: torch_zeros_bool(3)}},
    "train.mse_per_model": {"out": {"an extra axis of 3": _t(lambda v: v[..., None].expand(*v.shape, 3))}},
    "train.logistic_per_model": {"out": {"an extra axis of 3": _t(lambda v: v[..., None].expand(*v.shape, 3))}},
    "landscape.train_square": {"Y": {"a column short of the outputs": lambda v: np.asarray(v)[:, :-1]},
                               "X": {"not square images": lambda v: np.asarray(v)[:, :-1]}},
    "landscape.exact_fit": {"Y": {"a row short of F": lambda v: np.asarray(v)[:-1]},
                            "F": {"a row short of Y": lambda v: np.asarray(v)[:-1]}},
    "skip_connections.exact_readout": {"y": {"shape (n, 1)": _t(lambda v: v[:, None]), "one label short": _t(lambda v: v[:-1])}},
    "skip_connections.accuracy": {"y": {"shape (n, 1)": _t(lambda v: v[:, None]), "one label short": _t(lambda v: v[:-1])}},
    "maxmargin.two_layer_forward": {"X": {"a column short": _t(lambda v: v[..., :-1]), "float32": _t(lambda v: v.float()),
                                          "batches for 3 models (params has 2)": _t(lambda v: v[None].expand(3, -1, -1))},
                                    "params": {"a of another width": lambda v: [v[0], v[1].detach()[:, :-1]]}},
    "maxmargin.residual_forward": {"params": {"a middle layer of another shape": lambda v: [v[0], v[0].detach(), *v[2:]]}},
    "maxmargin.train_sgd": {"X": {"a column short": _t(lambda v: v[..., :-1])},
                            "params": {"a of another width": lambda v: [v[0], v[1].detach()[:, :-1].requires_grad_()],
                                       "without gradients": lambda v: [p.detach() for p in v]}},
    "maxmargin.train_normalized_gd": {"params": {"without gradients": lambda v: [p.detach() for p in v]}},
    "maxmargin.log_loss": {"X": {"a column short": _t(lambda v: v[..., :-1])}},
    "maxmargin.neuron_alignment": {"w_plus": {"zero vector": np.zeros_like}, "w_minus": {"zero vector": np.zeros_like},
                                   "a": {"one entry short": lambda v: v[:-1]}},
    "maxmargin.theorem_residuals": {"W": {"all zeros": np.zeros_like, "a column short of w_plus": lambda v: v[:, :-1]},
                                    "a": {"all zeros": np.zeros_like},
                                    "w_plus": {"zero vector": np.zeros_like}, "w_minus": {"zero vector": np.zeros_like}},
    "maxmargin.norm_split": {"W": {"zero rows where a < 0": _zero_rows_of_negative_neurons}},
    "multiexit.multiexit_objective": {"distill": {"NaN weight": lambda v: torch_tensor([NAN]), "negative weight": lambda v: -1.0}},
    "multiexit.TemperatureAnnealer": {"active": {"two flags for one model": lambda v: [True, True], "not a flag": lambda v: [2]}},
    "multiexit.exit_probs": {"X": {"batches for 2 models (model has 1)": _t(lambda v: torch_stack([v, v]))}},
    "multiexit.per_exit_accuracy": {"probs": {"negative probabilities": lambda v: np.asarray(v) - 1.0}},
    "multiexit.anytime_mode_accuracy": {"probs": {"negative probabilities": lambda v: np.asarray(v) - 1.0}},
    "multiexit.MultiExitConfig": {"strides": {"one stride per block short": lambda v: v[:-1]},
                                  "n_val_per_class": {"all images for validation": lambda v: 15},
                                  "data_sizes": {"a size without epochs": lambda v: (15,)},
                                  "topk": {"more than n_classes": lambda v: 11}},
    "teacher_student_conv.CifarConfig": {"std": {"one per channel short": lambda v: v[:-1]},
                                         "image": {"(C, H) only": lambda v: v[:2]}},
    "teacher_student_conv.ConvNet.forward": {"x": {"images of another size": _t(lambda v: v[..., :-1])}},
    "mae.SentenceGrammar": {"templates": {"an undefined slot": lambda v: ("the {villain} .",)}},
    "annulus_training.LeakEnsemble.forward": {"X": {"float64": _t(lambda v: v.double())}},
    "annulus_training.sign_accuracy": {"X": {"float64": _t(lambda v: v.double())}},
    "annulus_training.train_ball_vs_shell": {"X": {"float64": _t(lambda v: v.double())}},
    "linear_regions.pattern_string": {"pattern": {"not bits": lambda v: [2, 0]}},
    "linear_regions.zero_sets_2d": {"layer": {"True": lambda v: True}},
    # (a generic probe, dropping one row or column of one array argument of every call, found these)
    "landscape.cross_entropy_loss": {"X": {"a row short of y": lambda v: np.asarray(v)[:-1]}},
    "skip_connections.readout_sweep": {"X": {"a row short of y": _t(lambda v: v[:-1])},
                                       "X_test": {"a row short of y_test": _t(lambda v: v[:-1])}},
    "distill.signed_angle": {"u": {"one entry short of v": lambda v: v[:-1]}},
    "distill.transfer_risk_exact": {"w": {"one entry short of w_teacher": lambda v: v[:-1]},
                                    "w_teacher": {"one entry short of w": lambda v: v[:-1]}},
    "distill.monotonicity_counts": {"angle_before": {"one angle short": lambda v: v[:-1]}},
    "maxmargin.pm_max_margin": {"X": {"a row short of y": lambda v: v[:-1]}},
    "maxmargin.gamma_star": {"w_plus": {"one entry short of w_minus": lambda v: v[:-1]}},
    "boolean.relu_sign_pattern": {"w": {"a column short of b": lambda v: v[:, :-1]}},
    "train.cross_entropy_per_model": {"out": {"a class short of y": _t(lambda v: v[..., :-1])}},
    "teacher_student.alignment": {"w_teacher": {"one entry short of w_student": lambda v: v[:-1]}},
    "image_nets.plane_through": {"A": {"one pixel short": lambda v: v[:-1]}},
}


def torch_ones(*shape):
    import torch
    return torch.ones(*shape)


def torch_zeros_bool(n):
    import torch
    return torch.zeros(n, dtype=torch.bool)


def torch_stack(tensors):
    import torch
    return torch.stack(tensors)


def torch_tensor(values):
    import torch
    return torch.tensor(values)


def mismatch_calls(module: str, name: str, valid: dict):
    """``(arg, label, call)`` for every value of :data:`MISMATCH` of ``module.name``: the valid call (its
    values) with that argument replaced (added, if the valid call leaves it at its default)."""
    for arg, bads in MISMATCH.get(f"{module}.{name}", {}).items():
        for label, make in bads.items():
            call = dict(valid)
            call[arg] = make(call.get(arg))
            yield arg, label, call


#: Public functions and methods the sweep does not call, each with its reason; every other public
#: function, class and method of ``MODULES`` has a ``SPECS`` entry (``unswept()``, pinned by a test).
#: Not listed because nothing is checked there: dataclass records and exception types (the book builds
#: them; their consumers check the values), and functions and methods without arguments.
_NETWORK = "a network-only loader of the paper scale (not called offline)"
_PER_STEP = ("a model method that the book's trainer or estimator calls on every step with tensors it has "
             "already checked (the trainer and the model's constructor are swept); a check here would cost "
             "time on every step")
_DEVICE_STEP = ("a builder of one training step as a device program (issue 36, lib.device_step), called by its "
                "trainer after the trainer has checked every argument (the trainer is swept; the step-time script and "
                "tests/test_paper_steps.py call it on inputs they built); the step it returns "
                "must not check values, since a check reads them back to the host inside a CUDA graph")
NOT_SWEPT = {
    "data.fetch": _NETWORK, "data.load_online": _NETWORK, "multiexit.cifar100_protocol": _NETWORK,
    "image_nets.paper_split": _NETWORK, "image_nets.paper_zoo": _NETWORK,
    "mae.load_imdb_sentences": _NETWORK,
    **{name: _DEVICE_STEP for name in (
        "multiexit.multiexit_step", "mae.sequence_step", "teacher_student.deep_step", "train.minibatch_step")},
    "data.md5sum": "the checksum of a file the network loader has just written (the loader is network-only)",
    **{name: _PER_STEP for name in (
        "boolean.StackedMLP.backward", "boolean.StackedMLP.keep_nets", "pruning.MaskedMLP.backward",
        "multiexit.TemperatureAnnealer.step", "multiexit.MultiExitCNN.forward", "multiexit.MultiExitCNN.forward_until",
        *(f"mae.{cls}.{m}" for cls, ms in (
            ("NormalMAE", ("decoder", "encoder", "log_r", "sample_joint", "elbo", "expected_log_r", "r_loss")),
            ("FiniteMAE", ("log_p_all", "log_p_at", "log_r_all", "elbo", "expected_log_r", "r_loss")),
            ("SequenceMAE", ("encoder", "encode_sample", "log_r", "log_p_x_given_z", "sample_x", "elbo",
                             "expected_log_r", "r_loss"))) for m in ms))},
}


def unswept() -> list[str]:
    """Public functions, classes and methods of ``MODULES`` with neither a ``SPECS`` entry nor a reason in
    ``NOT_SWEPT`` (a test asks for none)."""
    import dataclasses
    swept = {f"{m}.{n}" for m, n, _ in _specs()}
    missing = []
    for m in MODULES:
        mod = importlib.import_module(f"lib.{m}")
        for name, obj in vars(mod).items():
            if name.startswith("_") or "__mutmut" in name or getattr(obj, "__module__", None) != mod.__name__:
                continue  # (mutmut's copies of each function, x_<name>__mutmut_<k>, are not the module's API)
            if inspect.isclass(obj):
                if dataclasses.is_dataclass(obj) or issubclass(obj, BaseException):
                    continue
                members = [(f"{name}.{k}", v) for k, v in vars(obj).items()
                           if not k.startswith("_") and "__mutmut" not in k and inspect.isfunction(v)]
                members.append((name, obj))
            elif inspect.isfunction(obj):
                members = [(name, obj)]
            else:
                continue
            for key, fn in members:
                params = [p for p in _parameters(fn) if p != "self"]
                if params and f"{m}.{key}" not in swept and f"{m}.{key}" not in NOT_SWEPT:
                    missing.append(f"{m}.{key}")
    return missing


def _parameters(fn) -> list[str]:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


# ----------------------------------------------------------------------------------------------

class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def classify(fn, kwargs, arg) -> tuple[str, str]:
    """('clear' | 'unclear' | 'none', what happened) for one call."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(**kwargs)
    except _Timeout:
        return "unclear", "no answer within 20 s"
    except (ValueError, TypeError) as e:
        msg = str(e)
        if arg in msg or arg.replace("_", " ") in msg:
            return "clear", f"{type(e).__name__}: {msg}"
        return "unclear", f"{type(e).__name__} not naming {arg}: {msg}"
    except Exception as e:  # noqa: BLE001
        return "unclear", f"{type(e).__name__}: {e}"
    finally:
        signal.alarm(0)
    return "none", "no error"


def function(module: str, name: str):
    """The public function ``lib.<module>.<name>``; ``Class.method`` gives the plain function of the class,
    called with ``self=`` an instance (kind None: not varied)."""
    obj = importlib.import_module(f"lib.{module}")
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _defaults(fn) -> dict:
    try:
        return {k: p.default for k, p in inspect.signature(fn).parameters.items()}
    except (TypeError, ValueError):
        return {}


def sweep(verbose: bool = False, only=None) -> dict:
    import torch
    torch.set_num_threads(1)
    counts = {m: {"clear": 0, "unclear": 0, "none": 0} for m in MODULES}
    mismatched = {"clear": 0, "unclear": 0, "none": 0}  # of which: MISMATCH's calls
    problems, broken = [], []
    for module, name, factory in _specs():
        if only and module not in only:
            continue
        fn = function(module, name)
        try:
            valid = factory()
        except Exception as e:  # noqa: BLE001
            broken.append(f"{module}.{name}: building the valid call fails: {type(e).__name__}: {e}")
            continue
        outcome, what = classify(fn, {k: v for k, (v, _) in valid.items()}, "")
        if outcome != "none":
            broken.append(f"{module}.{name}: the valid call fails: {what}")
            continue
        defaults = _defaults(fn)
        for arg, (value, kind) in valid.items():
            if kind is None:
                continue
            for label, bad in BAD[kind].items():
                if label == "None" and arg in defaults and defaults[arg] is None:
                    continue  # None is this argument's default: intended, not bad
                call = {k: v for k, (v, _) in factory().items()}
                if kind == "widths":
                    bad = _widths_bad(call[arg], bad)
                elif callable(bad) and kind not in ("callable",):
                    try:
                        bad = bad(call[arg])
                    except Exception:  # noqa: BLE001  (this kind of bad value does not apply)
                        continue
                call[arg] = bad
                outcome, what = classify(fn, call, arg)
                counts[module][outcome] += 1
                if outcome != "clear":
                    problems.append(f"[{outcome}] {module}.{name}({arg}={label}): {what[:160]}")
        for arg, label, call in mismatch_calls(module, name, {k: v for k, (v, _) in factory().items()}):
            outcome, what = classify(fn, call, arg)
            counts[module][outcome] += 1
            mismatched[outcome] += 1
            if outcome != "clear":
                problems.append(f"[{outcome}] {module}.{name}({arg}={label}): {what[:160]}")
    return {"counts": counts, "problems": problems, "broken": broken, "mismatched": mismatched}


def report(res: dict, verbose: bool) -> str:
    lines = [f"{'module':18s} {'calls':>6s} {'clear':>7s} {'unclear':>8s} {'none':>7s}"]
    tot = {"clear": 0, "unclear": 0, "none": 0}
    for m, c in res["counts"].items():
        n = sum(c.values())
        if not n:
            continue
        for k in tot:
            tot[k] += c[k]
        lines.append(f"{m:18s} {n:6d} {100 * c['clear'] / n:6.1f}% {100 * c['unclear'] / n:7.1f}% "
                     f"{100 * c['none'] / n:6.1f}%")
    n = sum(tot.values())
    lines.append(f"{'ALL':18s} {n:6d} {100 * tot['clear'] / n:6.1f}% {100 * tot['unclear'] / n:7.1f}% "
                 f"{100 * tot['none'] / n:6.1f}%")
    if "mismatched" in res:
        c = res["mismatched"]
        lines.append(f"of which mismatched or degenerate (MISMATCH): {sum(c.values())} calls, {c['clear']} clear, "
                     f"{c['unclear']} unclear, {c['none']} none")
    if res["broken"]:
        lines.append(f"\n{len(res['broken'])} valid call(s) failed (their functions were not swept):")
        lines += ["  " + b for b in res["broken"]]
    if verbose:
        lines.append("\ncalls without a clear error:")
        lines += ["  " + p for p in res["problems"]]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]),
                    help="checkout whose lib/ is swept (default: this one)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every call without a clear error")
    ap.add_argument("--modules", default="", help="comma-separated subset of modules")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(args.root).resolve()))
    import lib
    print(f"sweeping {Path(lib.__file__).parent}")
    res = sweep(args.verbose, [m for m in args.modules.split(",") if m])
    print(report(res, args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
