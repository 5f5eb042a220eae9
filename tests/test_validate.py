"""lib.validate: the argument-checking vocabulary, the intended 'bad-looking' inputs of lib, training
that fails fast on a NaN/inf loss, and property-based tests (Hypothesis) of valid inputs.

The bad-input properties of every public function are in ``test_bad_input_properties.py``.
"""

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lib import validate as V
# The property tests below: imported here, not in the test, so that the first Hypothesis example does not time
# the import (12 s for mutmut's instrumented copies, over the 2 s deadline).
from lib import boolean as B
from lib import boolean_families as BF
from lib import distill as D
from lib import equivalence as E
from lib import multiexit as ME
from lib import nets
from lib import train as T

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
bad_float = st.sampled_from([math.nan, math.inf, -math.inf])
not_a_number = st.one_of(st.none(), st.text(max_size=3), st.lists(st.integers(), max_size=2),
                         st.booleans())


def _names(err, *words):
    msg = str(err.value)
    return all(w in msg for w in words)


# ---------------------------------------------------------------------------------------------
# the vocabulary


@given(st.integers(min_value=1, max_value=10**9))
def test_positive_int_accepts_and_returns_ints(n):
    assert V.positive_int(n, "n") == n and type(V.positive_int(np.int64(n), "n")) is int


@given(st.integers(max_value=0))
def test_positive_int_rejects_non_positive_with_the_name_and_value(n):
    with pytest.raises(V.ArgumentValueError) as err:
        V.positive_int(n, "steps")
    assert _names(err, "steps", ">=", repr(n))


@given(st.one_of(finite, not_a_number))
def test_integer_rejects_other_types_as_type_errors(x):
    with pytest.raises(V.ArgumentTypeError) as err:
        V.integer(x, "width")
    assert isinstance(err.value, TypeError) and isinstance(err.value, ValueError)
    assert _names(err, "width", "an int")


@given(st.floats(min_value=1e-300, max_value=1e300))
def test_positive_accepts_positive_floats(x):
    assert V.positive(x, "lr") == x


@given(st.one_of(st.floats(max_value=0.0, allow_nan=False), bad_float))
def test_positive_rejects_zero_negative_nan_inf(x):
    with pytest.raises(V.ArgumentValueError) as err:
        V.positive(x, "lr")
    assert _names(err, "lr", "finite number > 0")


@given(not_a_number)
def test_real_rejects_non_numbers(x):
    with pytest.raises(V.ArgumentTypeError) as err:
        V.real(x, "noise")
    assert _names(err, "noise", "a real number")


@given(st.one_of(st.floats(max_value=-1e-12), st.floats(min_value=1.0), st.just(math.nan)))
def test_fraction_is_half_open(x):
    with pytest.raises(V.ArgumentValueError, match="momentum"):
        V.fraction(x, "momentum")
    assert V.fraction(0.0, "m") == 0.0 and V.fraction(1.0, "m", high_open=False) == 1.0


def test_choice_seed_boolean_callable_instance_sequence():
    assert V.choice("sgd", "optimizer", ("sgd", "adam")) == "sgd"
    with pytest.raises(V.ArgumentValueError, match=r"optimizer must be one of \('sgd', 'adam'\), got str 'SGD'"):
        V.choice("SGD", "optimizer", ("sgd", "adam"))
    with pytest.raises(V.ArgumentValueError):
        V.choice(1, "k", (True, 2))  # 1 == True, but an int is not the bool option
    assert V.seed(None, allow_none=True) is None
    with pytest.raises(V.ArgumentTypeError, match="seed"):
        V.seed(None)
    with pytest.raises(V.ArgumentValueError, match="seed"):
        V.seed(-1)
    with pytest.raises(V.ArgumentTypeError, match="progress must be a bool"):
        V.boolean(1, "progress")
    with pytest.raises(V.ArgumentTypeError, match="loss_fn must be callable"):
        V.callable_(3, "loss_fn")
    with pytest.raises(V.ArgumentTypeError, match="model must be a Module"):
        V.instance("net", "model", torch.nn.Module)
    assert V.sequence(range(3), "widths") == [0, 1, 2]
    for bad in ("abc", 3, None, {"a": 1}, np.float64(1.0)):
        with pytest.raises(V.ArgumentTypeError, match="widths"):
            V.sequence(bad, "widths")


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1), elements=finite))
def test_array_accepts_finite_2d_without_copying(a):
    out = V.array(a, "X", ndim=2, shape=(None, a.shape[1]))
    assert out is a or np.shares_memory(out, a)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1), elements=finite),
       st.data())
def test_array_rejects_a_nan_or_inf_anywhere(a, data):
    i = data.draw(st.integers(0, a.size - 1))
    a.reshape(-1)[i] = data.draw(bad_float)
    with pytest.raises(V.ArgumentValueError) as err:
        V.array(a, "X")
    assert _names(err, "X", "finite", str(a.shape))
    with pytest.raises(V.ArgumentValueError, match="X must be finite"):
        V.tensor(torch.from_numpy(a), "X")


@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0))
def test_array_shape_ndim_and_emptiness(shape):
    a = np.zeros(shape)
    if 0 in shape:
        with pytest.raises(V.ArgumentValueError, match="non-empty"):
            V.array(a, "X")
    else:
        assert V.array(a, "X").shape == shape
    with pytest.raises(V.ArgumentValueError, match=r"X must be an array with 4 dimensions"):
        V.array(a, "X", ndim=4)
    with pytest.raises(V.ArgumentValueError, match=r"X must be an array of shape \(n, 99\)"):
        V.array(np.ones((2, 3)), "X", shape=(None, 99))


def test_array_and_tensor_types():
    for bad in ("abc", None, {"a": 1}, [["a", "b"]], np.array([1 + 2j])):
        with pytest.raises(V.ArgumentTypeError, match="X must be"):
            V.array(bad, "X")
    t = torch.ones(3)
    assert V.tensor(t, "X") is t
    with pytest.raises(V.ArgumentTypeError, match=r"X must be a torch.Tensor, got array of shape \(3,\)"):
        V.tensor(np.ones(3), "X")
    assert isinstance(V.tensor(np.ones(3), "X", convert=True), torch.Tensor)
    with pytest.raises(V.ArgumentTypeError, match="floating-point"):
        V.tensor(torch.arange(3), "X", floating=True)
    with pytest.raises(V.ArgumentTypeError, match="integer"):
        V.tensor(torch.ones(3), "y", floating=False)


@given(st.integers(2, 10), st.data())
def test_labels_in_range(K, data):
    y = np.array(data.draw(st.lists(st.integers(0, K - 1), min_size=1, max_size=20)))
    assert V.labels(y, "y", K) is y
    y[data.draw(st.integers(0, len(y) - 1))] = data.draw(st.one_of(st.integers(K, 1000), st.integers(-1000, -1)))
    with pytest.raises(V.ArgumentValueError, match="y must be class indices"):
        V.labels(y, "y", K)


def test_finite_loss_names_the_step_and_the_likely_cause():
    V.finite_loss(torch.tensor([0.5, 1.0]), 3)
    with pytest.raises(V.TrainingDivergedError, match=r"by step 7 with lr=10\.0: the learning rate is most likely too large"):
        V.finite_loss(torch.tensor([0.5, math.nan]), 7, 10.0)
    with pytest.raises(FloatingPointError):
        V.finite_loss(np.array(math.inf), 1)


def test_lib_validate_does_not_import_torch_itself():
    import subprocess
    import sys

    code = "import sys, lib.validate, lib.scale; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=__import__("pathlib").Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------------------------
# training fails fast on a NaN/inf loss


def test_train_full_batch_stops_at_a_nan_loss_naming_step_and_lr():
    from lib.nets import BatchedMLP
    from lib.train import mse_per_model, train_full_batch

    X, y = torch.randn(16, 2, generator=torch.Generator().manual_seed(0)) * 10, torch.ones(16, 1) * 10
    with pytest.raises(V.TrainingDivergedError, match=r"by step \d+ with lr=1000000\.0.*learning rate") as err:
        train_full_batch(BatchedMLP([2, 8, 1], n_models=2), X, y, mse_per_model, 20000, lr=1e6, progress=False)
    step = int(str(err.value).split("by step ")[1].split()[0])
    assert step <= 400  # fails fast: within log_every (200) steps of the blow-up, not at the end


def test_train_minibatch_stops_at_a_nan_loss():
    from lib.nets import BatchedMLP
    from lib.train import mse_per_model, train_minibatch

    X, y = torch.randn(16, 2, generator=torch.Generator().manual_seed(0)) * 10, torch.ones(16, 1) * 10
    with pytest.raises(V.TrainingDivergedError, match=r"by step \d+ \(epoch\)"):
        train_minibatch(BatchedMLP([2, 8, 1], n_models=2), X, y.expand(16, 1), mse_per_model, 5, 8, lr=1e6,
                        progress=False)


def test_maxmargin_trainers_stop_at_a_nan_loss():
    from lib import maxmargin as MM

    X, y = MM.orthogonally_separable_gaussian(20, 3, seed=0)
    Xt, yt = torch.tensor(X).expand(2, -1, -1) * 1e3, torch.tensor(y).expand(2, -1)
    params = MM.default_init([(4, 3), (1, 4)], 2, 0, 1.0)
    with pytest.raises(V.TrainingDivergedError, match="epoch"):
        MM.train_sgd(MM.two_layer_forward, params, Xt, yt, lr=1e300, batch_size=5, epochs=3, seed=0,
                     progress=False)


def test_xor1d_stops_on_divergence():
    from lib import boolean as B

    with pytest.raises(V.TrainingDivergedError, match="step 50"):
        B.xor1d_local_optima(3, steps=50, lr=1e3)


# ---------------------------------------------------------------------------------------------
# intended inputs that look bad (each documented in its function's docstring)


def test_empty_batch_gives_an_empty_result():
    from lib import mae, nets

    params = nets.init_mlp([2, 3, 1], seed=0)
    assert nets.mlp_forward(params, torch.zeros(0, 2)).shape == (0, 1)
    assert nets.activate(torch.zeros(0, 4)).shape == (0, 4)
    assert mae.gaussian_logpdf(torch.zeros(0), torch.zeros(()), torch.zeros(())).shape == (0,)
    assert mae.kl_std_normal(torch.zeros(0, 2), torch.zeros(2)).shape == (0, 2)


def test_none_defaults_mean_the_documented_thing():
    from lib import boolean as B
    from lib import boolean_families as BF
    from lib import mae
    from lib.nets import BatchedMLP
    from lib.train import logistic_per_model, train_full_batch

    assert BF.xor_parity_tables(4).shape == (len(B.npn_classes(4)), 16)       # ids=None: all NPN classes
    model = mae.FiniteMAE([0, 1], torch.full((4,), 0.25), hidden=4)
    trace = mae.train_mae(model, [None, 0.5], steps=2, batch=8, log_every=1)  # None: a plain VAE
    assert len(trace.steps) == 2
    trace = mae.train_mae(model, 0.5, steps=1, batch=8)                       # one target for all models
    assert len(trace.steps) == 1
    hist = train_full_batch(BatchedMLP([2, 3, 1], n_models=1), torch.ones(4, 2), torch.ones(4), logistic_per_model,
                            250, lr=0.1, log_every=None, progress=False)     # None: steps // 100
    assert hist.steps[:3] == [0, 2, 4]


def test_other_intended_edge_inputs():
    from lib import boolean as B
    from lib import maxmargin as MM
    from lib import multiexit as ME
    from lib.train import mse_per_model

    # a constant function: swaps_network has a hidden layer of width 0, network_output accepts it
    net = B.swaps_network(np.zeros(4, dtype=int))
    assert net[0][0].shape == (0, 2) and np.all(B.network_output(net, B.cube(2)) < 0)
    # targets with one value per output, in another shape, are reshaped like the outputs
    out = torch.randn(2, 4, 1)
    assert torch.equal(mse_per_model(out, torch.ones(4)), mse_per_model(out, torch.ones(4, 1)))
    # maxmargin: a of any shape holding one value per neuron (a torch layer's row)
    W, a = np.eye(3)[:2], np.array([1.0, -1.0])
    assert MM.norm_split(W, a[None, :]) == MM.norm_split(W, a)
    # numpy's negative axes
    arr = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert np.allclose(ME.mean_ci95(arr, axis=-1)[0], ME.mean_ci95(arr.T, axis=0)[0])
    # zero epochs / zero steps: nothing is trained
    X, y = MM.orthogonally_separable_gaussian(20, 3, seed=0)
    params = MM.default_init([(4, 3), (1, 4)], 2, 0, 0.1)
    log = MM.train_sgd(MM.two_layer_forward, params, torch.tensor(X).expand(2, -1, -1),
                       torch.tensor(y).expand(2, -1), 0.1, 5, 0, 0, log_epochs=(0,), progress=False)
    assert list(log) == [0]
    table, value, finals = B.climb_max_swaps(2, 2, seed=0, max_steps=0, progress=False)
    assert value == finals.max()


# ---------------------------------------------------------------------------------------------
# valid inputs: a finite result of the documented shape (hypothesis.extra.numpy)

small = st.floats(-10, 10, allow_nan=False, width=64)


@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 4), st.integers(0, 8), st.data())
def test_forwards_of_random_networks_are_finite_and_agree(d0, d1, d2, n, data):
    params = [(data.draw(hnp.arrays(np.float64, (d1, d0), elements=small)), data.draw(hnp.arrays(np.float64, (d1,), elements=small))),
              (data.draw(hnp.arrays(np.float64, (d2, d1), elements=small)), data.draw(hnp.arrays(np.float64, (d2,), elements=small)))]
    X = data.draw(hnp.arrays(np.float64, (max(n, 1), d0), elements=small))
    out = E.forward(params, X)
    assert out.shape == (max(n, 1), d2) and np.isfinite(out).all()
    tparams = [(torch.from_numpy(W), torch.from_numpy(b)) for W, b in params]
    assert np.allclose(nets.mlp_forward(tparams, torch.from_numpy(X)).numpy(), out)
    if d2 == 1:
        assert np.allclose(B.network_output(params, X), out[:, 0])


@given(st.integers(1, 4), st.data())
def test_fourier_metrics_of_random_tables(n, data):
    tables = data.draw(hnp.arrays(np.uint8, (data.draw(st.integers(1, 5)), 2 ** n), elements=st.integers(0, 1)))
    m = BF.fourier_metrics(tables)
    for key in ("degree", "influence", "entropy"):
        assert m[key].shape == (len(tables),) and np.isfinite(m[key]).all()
    assert (m["degree"] <= n).all() and (m["influence"] <= n + 1e-9).all()


@given(st.integers(1, 6), st.integers(1, 5), st.data())
def test_distill_losses_of_random_data(n, d, data):
    X = data.draw(hnp.arrays(np.float64, (n, d), elements=small))
    w = data.draw(hnp.arrays(np.float64, (d,), elements=small))
    y = D.soft_labels(X, w, temperature=data.draw(st.floats(0.1, 10)))
    assert y.shape == (n,) and ((0 <= y) & (y <= 1)).all()
    loss, grad = D.ce_loss(w, X, y), D.ce_grad(w, X, y)
    assert np.isfinite(loss) and loss >= -1e-9 and grad.shape == (d,) and np.isfinite(grad).all()


@given(st.integers(1, 3), st.integers(1, 6), st.integers(2, 5), st.data())
def test_per_model_losses_of_random_outputs(M, n, K, data):
    out = torch.from_numpy(data.draw(hnp.arrays(np.float64, (M, n, K), elements=small)))
    y = torch.from_numpy(data.draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, K - 1))))
    for loss in (T.cross_entropy_per_model(out, y), T.mse_per_model(out, out.detach() * 0),
                 T.logistic_per_model(out[..., :1], torch.ones(n, 1))):
        assert loss.shape == (M,) and torch.isfinite(loss).all()


@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 6), st.integers(2, 4), st.data())
def test_multiexit_accuracies_of_random_probabilities(S, M, n, K, data):
    probs = data.draw(hnp.arrays(np.float64, (S, M, n, K), elements=st.floats(0, 1)))
    y = data.draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, K - 1)))
    for acc in (ME.per_exit_accuracy(probs, y), ME.anytime_mode_accuracy(probs, y)):
        assert acc.shape == (S, M) and ((0 <= acc) & (acc <= 100)).all()


@settings(deadline=None)  # a training function
@given(st.integers(1, 3), st.integers(2, 12), st.floats(1e-3, 0.5), st.integers(0, 2**16))
def test_training_valid_inputs_give_finite_losses(n_models, n, lr, seed):
    from lib.nets import BatchedMLP
    from lib.train import logistic_per_model, train_full_batch, train_minibatch

    g = torch.Generator().manual_seed(seed)
    X, y = torch.randn(n, 2, generator=g), torch.randint(0, 2, (n,), generator=g).float() * 2 - 1
    hist = train_full_batch(BatchedMLP([2, 4, 1], n_models=n_models), X, y, logistic_per_model, 5, lr=lr,
                            progress=False)
    assert hist.losses().shape == (len(hist.steps), n_models) and np.isfinite(hist.losses()).all()
    hist = train_minibatch(BatchedMLP([2, 4, 1], n_models=n_models), X, y, logistic_per_model, 2, 4, lr=lr,
                           seed=seed, progress=False)
    assert hist.losses().shape == (2, n_models) and np.isfinite(hist.losses()).all()


def test_interval():
    from lib import validate as V

    assert V.interval((0, 2.5), "domain") == (0.0, 2.5)
    for bad in [(1, 1), (2, 1), (0, float("inf")), (0, float("nan")), (1,), "ab", None, 3]:
        with pytest.raises(ValueError, match="domain must be"):
            V.interval(bad, "domain")


def test_config_rules_name_the_field():
    """lib.validate.config checks a dataclass's fields at construction; each/items/one_of/of_type are rules."""
    from dataclasses import dataclass

    from lib import validate as V

    @dataclass(frozen=True)
    class Toy:
        steps: int = 3
        phases: tuple = ((0.1, 5),)
        sizes: tuple = (1, 2)
        data: str = "digits"
        name: str = "x"

        def __post_init__(self):
            V.config(self, {"steps": V.positive_int, "phases": V.each(V.items(V.positive, V.positive_int), min_len=1),
                            "sizes": V.each(V.positive_int, length=2), "data": V.one_of("digits", "mnist"),
                            "name": V.of_type(str)})

    Toy()  # valid, and unchanged
    assert Toy(steps=7).steps == 7
    for change, match in [(dict(steps=0), r"Toy\.steps must be an int >= 1"),
                          (dict(steps="3"), r"Toy\.steps must be an int, got str"),
                          (dict(steps=True), r"Toy\.steps must be an int"),
                          (dict(phases=()), r"Toy\.phases must be a sequence of at least 1"),
                          (dict(phases=((0.1, 0),)), r"Toy\.phases\[0\]\[1\] must be an int >= 1"),
                          (dict(phases=((0.1,),)), r"Toy\.phases\[0\] must be a tuple of 2 items"),
                          (dict(phases=((-0.1, 5),)), r"Toy\.phases\[0\]\[0\] must be a finite number > 0"),
                          (dict(sizes=(1,)), r"Toy\.sizes must be a sequence of 2 item"),
                          (dict(sizes=(1, 0)), r"Toy\.sizes\[1\] must be an int >= 1"),
                          (dict(sizes=5), r"Toy\.sizes must be a list or tuple"),
                          (dict(data="cifar"), r"Toy\.data must be one of"),
                          (dict(name=3), r"Toy\.name must be a str")]:
        with pytest.raises(ValueError, match=match):
            Toy(**change)


def test_same_size_names_both_arguments():
    from lib import validate as V

    V.same_size(3, "X", 3, "y")
    with pytest.raises(V.ArgumentValueError, match=r"X and y must agree in rows, got 3 and 4"):
        V.same_size(3, "X", 4, "y", "rows")


def test_shape_and_label_errors_name_the_argument_they_must_agree_with():
    from lib import validate as V

    with pytest.raises(V.ArgumentValueError, match=r"^Y must be an array of shape \(3, n\) to agree with F, got"):
        V.array(np.ones((2, 1)), "Y", shape=(3, None), agree="F")
    with pytest.raises(V.ArgumentValueError, match=r"^y must be an array of shape \(3,\) to agree with X, got"):
        V.tensor(torch.ones(2), "y", shape=(3,), agree="X")
    with pytest.raises(V.ArgumentValueError, match=r"^y must be one label per row of X \(3 rows\), got"):
        V.labels(np.zeros(2, int), "y", 2, n=3, rows_of="X")
    with pytest.raises(V.ArgumentValueError, match=r"< 2 \(the number of classes, of out\); it holds 0\.\.2"):
        V.labels(np.arange(3), "y", 2, classes_of="out")
    with pytest.raises(V.ArgumentValueError, match=r"^y must be one label per row \(3 rows\), got"):  # unchanged without
        V.labels(np.zeros(2, int), "y", 2, n=3)


def test_is_int_refuses_bools():
    from lib import validate as V

    assert V.is_int(3) and V.is_int(0) and V.is_int(-2)
    assert not any(V.is_int(v) for v in (True, False, 2.0, "3", None, np.int64(3)))  # (numpy ints: as isinstance)


# ---------------------------------------------------------------------------------------------
# exact messages and the edges of each rule (issue 37: validate's mutation record)


def _message(fn, *args, exc=ValueError, **kwargs):
    with pytest.raises(exc) as err:
        fn(*args, **kwargs)
    return str(err.value)


def test_describe_cuts_a_long_repr_to_60_characters():
    assert V.describe("a" * 58) == "str '" + "a" * 58 + "'"          # repr of 60 characters: kept whole
    assert V.describe("a" * 59) == "str '" + "a" * 56 + "..."         # 61: the first 57 and "..."
    assert V.describe(list(range(30)))[:9] == "list [0, " and len(V.describe(list(range(30)))) == 65
    assert V.describe(None) == "None" and V.describe(2.5) == "2.5" and V.describe(np.float32(1.5)) == "np.float32(1.5)"


def test_scalar_rules_name_what_they_got():
    assert _message(V.boolean, 1, "progress") == "progress must be a bool, got 1"
    assert _message(V.slope, 1.5) == "alpha must be a finite number >= 0 and < 1, got 1.5"
    assert _message(V.interval, "ab", "domain") == "domain must be a pair (lo, hi), got str 'ab'"
    assert _message(V.same_size, 3, "X", 4, "y") == "X and y must agree in size, got 3 and 4"
    assert _message(V.instance, "x", "n", (int, float)) == "n must be a int or float, got str 'x'"


def test_choice_of_a_value_that_cannot_be_compared_is_refused():
    class Incomparable:
        def __eq__(self, other):
            raise RuntimeError("no comparison")

        def __repr__(self):
            return "Incomparable()"

    for value in (Incomparable(), np.ones(2)):  # == raises, or gives an array with no truth value
        with pytest.raises(V.ArgumentValueError, match=r"^mode must be one of \('a', 'b'\), got "):
            V.choice(value, "mode", ("a", "b"))


def test_tensor_messages_and_integer_dtypes():
    assert _message(V.tensor, [[1, 2], [3]], "X", convert=True) == \
        "X must be a tensor (or an array convertible to one), got list [[1, 2], [3]]"
    assert _message(V.tensor, torch.tensor([1.0, math.inf]), "X") == \
        "X must be finite (no NaN or inf), got tensor of shape (2,) and dtype torch.float32"
    for not_integer in (torch.tensor([True, False]), torch.tensor([1 + 1j])):
        with pytest.raises(V.ArgumentTypeError, match="y must be an integer tensor"):
            V.tensor(not_integer, "y", floating=False)
    t = torch.tensor([1, 2])
    assert V.tensor(t, "y", floating=False) is t


def test_labels_edges():
    empty = np.zeros(0, dtype=int)
    assert V.labels(empty, "y", 3) is empty  # no labels (an empty batch) is allowed
    assert _message(V.labels, np.array([0.5, 1.0]), "y", 2) == \
        "y must be whole-number class indices, got array of shape (2,) and dtype float64"
    with pytest.raises(V.ArgumentValueError, match="whole-number"):
        V.labels(np.array([0.5], dtype=np.float32), "y", 2)  # any floating dtype, not only float64
    assert _message(V.labels, np.array([-1, 2]), "y") == \
        "y must be class indices >= 0; it holds -1..2, as, got array of shape (2,) and dtype int64"
    t = torch.tensor([0, 1, 1])
    assert V.labels(t, "y", 2) is t
    with pytest.raises(V.ArgumentValueError, match=r"< 2 \(the number of classes\); it holds 0\.\.2"):
        V.labels(torch.tensor([0, 2]), "y", 2)


def test_finite_loss_message_without_a_learning_rate():
    assert _message(V.finite_loss, np.array(math.inf), 1, exc=V.TrainingDivergedError) == (
        "the training loss became NaN or infinite by step 1: the learning rate is most likely too large "
        "(or the data or initial weights hold huge values); lower lr and retry")
    assert "training accuracy became" in _message(V.finite_loss, [1.0, math.nan], 2, what="accuracy",
                                                  exc=V.TrainingDivergedError)


def test_rule_messages_show_the_value():
    rule = V.each(V.positive_int, length=2)
    assert _message(rule, (1,), "Toy.sizes") == "Toy.sizes must be a sequence of 2 item(s), got tuple (1,)"
    rule = V.items(V.positive, V.positive_int)
    assert _message(rule, (0.1,), "Toy.phase") == "Toy.phase must be a tuple of 2 items, got tuple (0.1,)"
    assert _message(V.of_type(str, "a name"), 3, "Toy.name") == "Toy.name must be a name, got 3"


def test_integer_accepts_0d_integer_tensors_only():
    assert V.integer(torch.tensor(3), "n") == 3 and type(V.integer(torch.tensor(3), "n")) is int
    assert V.integer(np.int16(4), "n") == 4
    for bad in (torch.tensor(True), torch.tensor(3.0), torch.tensor([3]), torch.tensor(1 + 0j), np.array(3)):
        with pytest.raises(V.ArgumentTypeError, match="n must be an int, got"):
            V.integer(bad, "n")


def test_integer_bounds_are_inclusive_and_named():
    assert V.integer(5, "n", min=5, max=5) == 5
    assert _message(V.integer, 0, "n", min=1) == "n must be an int >= 1, got 0"
    assert _message(V.integer, 9, "n", max=5) == "n must be an int <= 5, got 9"
    assert _message(V.integer, 9, "n", min=1, max=5) == "n must be an int >= 1 and <= 5, got 9"
    assert _message(V.positive_int, 7, "n", max=5) == "n must be an int >= 1 and <= 5, got 7"
    assert _message(V.nonnegative_int, 7, "i", max=5) == "i must be an int >= 0 and <= 5, got 7"
    assert _message(V.seed, -1) == "seed must be an int >= 0, got -1"
    assert _message(V.seed, None) == "seed must be an int >= 0 (a random seed), got None"
    assert V.seed(0) == 0 and V.seed(None, "s", allow_none=True) is None


def test_real_reads_0d_arrays_and_tensors_and_closes_bounds_by_default():
    assert V.real(torch.tensor(2.5), "x") == 2.5 and type(V.real(np.array(2.5), "x")) is float
    for bad in (np.array([2.5]), torch.tensor([2.5])):
        with pytest.raises(V.ArgumentTypeError, match="x must be a real number"):
            V.real(bad, "x")
    assert V.real(1.0, "x", min=1.0, max=1.0) == 1.0  # closed at both ends unless opened


def test_real_messages_and_the_bounds_passed_on():
    assert _message(V.real, "a", "x") == "x must be a real number, got str 'a'"
    assert _message(V.real, math.nan, "x") == "x must be a finite number, got nan"
    assert _message(V.real, math.nan, "x", finite=False) == "x must be a number, got nan"
    assert V.real(math.inf, "x", finite=False) == math.inf
    assert _message(V.real, -1.0, "x", min=0.0) == "x must be a finite number >= 0, got -1.0"
    assert _message(V.real, 2.0, "x", max=1.0) == "x must be a finite number <= 1, got 2.0"
    assert _message(V.positive, 2.0, "lr", max=1.0) == "lr must be a finite number > 0 and <= 1, got 2.0"
    assert _message(V.nonnegative, 2.0, "wd", max=1.0) == "wd must be a finite number >= 0 and <= 1, got 2.0"
    assert _message(V.nonnegative, -1.0, "wd") == "wd must be a finite number >= 0, got -1.0"
    assert _message(V.fraction, 0.0, "p", low_open=True) == "p must be a finite number > 0 and < 1, got 0.0"


def test_sequence_edges_and_messages():
    assert V.sequence([], "w") == [] and V.sequence((1, 2), "w", min_len=2) == [1, 2]
    with pytest.raises(V.ArgumentTypeError, match=r"^w must be a list or tuple, got array of shape \(\)"):
        V.sequence(np.array(3), "w")  # iterable to Python, but a 0-d array holds one number
    assert _message(V.sequence, 3, "w") == "w must be a list or tuple, got 3"
    assert _message(V.sequence, [1], "w", min_len=2) == "w must be a sequence of at least 2 item(s), got list [1]"


def test_array_messages():
    assert _message(V.array, np.ones(3), "X", ndim=(2, 3)) == \
        "X must be an array with 2 or 3 dimensions (2-D or 3-D), got array of shape (3,) and dtype float64"
    assert _message(V.array, np.ones((2, 3)), "X", shape=(None, 99)) == \
        "X must be an array of shape (n, 99), got array of shape (2, 3) and dtype float64"
    assert _message(V.array, np.ones((0, 2)), "X") == "X must be non-empty, got array of shape (0, 2) and dtype float64"
    assert _message(V.array, None, "X") == "X must be a numeric array, got None"
    assert _message(V.array, {"a": 1}, "X") == "X must be a numeric array, got dict {'a': 1}"
    ragged = _message(V.array, [[1, 2], [3]], "X")
    assert ragged.startswith("X must be a numeric array (") and ragged.endswith("), got list [[1, 2], [3]]")
    assert _message(V.array, np.array([1 + 2j]), "X") == \
        "X must be a numeric array of real numbers, got array of shape (1,) and dtype complex128"
    assert _message(V.array, [1.0, math.inf], "X") == \
        "X must be finite (no NaN or inf), got array of shape (2,) and dtype float64"
    assert _message(V.array, [0.5], "i", integer=True) == \
        "i must be an array of whole numbers, got array of shape (1,) and dtype float64"


def test_array_dtypes_tensors_and_whole_numbers():
    out = V.array(torch.ones(2, requires_grad=True), "X")  # a tensor that needs its gradient is detached
    assert out.dtype == np.float64 and out.tolist() == [1.0, 1.0]
    assert V.array([1, 2], "X").dtype == np.float64
    assert V.array([1, 2], "X", dtype=np.float32).dtype == np.float32
    assert V.array([1, 2], "X", dtype=None).dtype == np.int64
    with pytest.raises(V.ArgumentValueError, match="X must be finite"):
        V.array(np.array([np.nan], dtype=np.float32), "X")  # any floating dtype
    whole = V.array([1.0, 2.0], "i", integer=True)
    assert whole.dtype == np.int64 and whole.tolist() == [1, 2]
    assert V.array(np.array([3, 4], dtype=np.int32), "i", integer=True).dtype == np.int64
    with pytest.raises(V.ArgumentValueError, match="whole numbers"):
        V.array(np.array([0.5], dtype=np.float32), "i", integer=True)


# ---------------------------------------------------------------------------------------------
# the exact messages and the accepted edge cases (each test below was seen failing under a mutant of
# lib/validate.py that the rest of this file let through)

def test_boolean_returns_the_value_and_callable_names_the_value():
    assert V.boolean(True, "flag") is True and V.boolean(np.bool_(True), "flag") is True
    assert V.boolean(False, "flag") is False
    with pytest.raises(TypeError, match=r"^f must be callable, got 5$"):
        V.callable_(5, "f")


def test_tensor_messages_name_argument_expectation_and_value():
    with pytest.raises(TypeError, match=r"^x must be a floating-point tensor, got tensor of shape \(2,\) and dtype torch.int64$"):
        V.tensor(torch.ones(2, dtype=torch.int64), "x", floating=True)
    with pytest.raises(TypeError, match=r"^x must be an integer tensor, got tensor of shape \(2,\) and dtype torch.float32$"):
        V.tensor(torch.ones(2), "x", floating=False)
    with pytest.raises(ValueError, match=r"^x must be an array with 1 dimensions \(1-D\), got tensor of shape \(2, 2\)"):
        V.tensor(torch.ones(2, 2), "x", ndim=1)
    with pytest.raises(ValueError, match=r"^x must be non-empty, got tensor of shape \(0,\)"):
        V.tensor(torch.ones(0), "x")  # nonempty is the default
    assert V.tensor(torch.ones(0), "x", nonempty=False).shape == (0,)


def test_labels_accepts_whole_floats_and_one_label_per_row():
    y = np.array([0.0, 2.0, 1.0])
    assert V.labels(y, "y", 3) is y  # whole numbers in a float array are class indices
    assert V.labels([0, 1], "y", 2, n=2, rows_of="X") == [0, 1]
    with pytest.raises(ValueError, match=r"^y must be one label per row of X \(3 rows\), got list \[0, 1\]$"):
        V.labels([0, 1], "y", 2, n=3, rows_of="X")
    with pytest.raises(TypeError, match=r"^y must be a numeric array"):
        V.labels(["a"], "y")


def test_finite_loss_takes_a_loss_that_requires_grad():
    """A trainer's loss tensor still holds its graph: the check reads it without numpy (which refuses such
    a tensor), and so also works on a GPU tensor."""
    loss = (torch.ones(3, requires_grad=True) * 2).sum()
    V.finite_loss(loss, 0)
    with pytest.raises(V.TrainingDivergedError, match="step 4"):
        V.finite_loss(loss * math.inf, 4)


def test_each_accepts_an_empty_tuple_and_items_names_the_field():
    assert V.each(V.positive_int)((), "Config.sizes") == ()
    with pytest.raises(TypeError, match=r"^Config.shape must be a list or tuple, got 5$"):
        V.items(V.positive_int, V.positive_int)(5, "Config.shape")
