"""Property-based bad-input tests (Hypothesis) for every public function (and public method) and every
configuration dataclass (each field) of the lib modules of ``scripts/bad_input_sweep.py``.

Each public function has one valid call and a kind per argument (``scripts/bad_input_sweep.py``,
``SPECS``). One test per (function, argument): the valid call succeeds; the call with that argument
replaced by each fixed bad value of its kind (the sweep's: wrong type, empty, wrong ndim, NaN, a label
out of range, ...) and by values Hypothesis draws (a non-positive size, an out-of-domain rate, a NaN
or inf at a random position of an array, ...) raises a ``ValueError`` or ``TypeError`` whose message
names that argument. ``HYPOTHESIS_PROFILE=thorough`` draws many more.
"""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

_path = Path(__file__).resolve().parents[1] / "scripts" / "bad_input_sweep.py"
_spec = importlib.util.spec_from_file_location("bad_input_sweep", _path)
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)

SPECS = {f"{m}.{n}": (m, n, f) for m, n, f in sweep._specs()}
TRAINING = {"train_boolean_nets", "prune_and_finetune", "xor1d_local_optima", "climb_max_swaps", "train_accuracy",
            "train_linear_student", "gd_linear", "train_hard_label_student", "recover", "identifiable_network",
            "train_full_batch", "train_minibatch", "wide_pruning_cell", "wide_pruning_table", "fit_masked",
            "deep_prune", "train_cnn", "channel_prune", "train_sgd", "train_normalized_gd", "train_multiexit",
            "train_mae", "time_inference", "digits_protocol", "make_mnist1d", "load_digits_split",
            "run_table_row", "paper_model"}

text = st.text(max_size=3)
nan_inf = st.sampled_from([math.nan, math.inf, -math.inf])
EXTRA = {  # random out-of-domain values per kind, on top of the sweep's fixed ones
    "count": st.integers(max_value=0) | st.floats(0.1, 1e3).filter(lambda x: x != int(x)) | text,
    "nonneg_int": st.integers(max_value=-1) | st.floats(0.1, 1e3).filter(lambda x: x != int(x)) | text,
    "seed": st.integers(max_value=-1) | st.floats(0.1, 1e3).filter(lambda x: x != int(x)) | text,
    "rate": st.floats(max_value=0.0, allow_nan=False) | nan_inf | text,
    "nonneg": st.floats(max_value=-1e-9, allow_nan=False) | nan_inf | text,
    "real": nan_inf | text,
    "slope": st.floats(min_value=1.0) | st.floats(max_value=-1e-9) | nan_inf,
    "fraction": st.floats(min_value=1.0 + 1e-9) | st.floats(max_value=-1e-9) | nan_inf,
    "choice": text.filter(lambda s: s not in ("relu", "he", "sgd", "xor", "last", "anytime", "respective")),
    "cfg_float": st.floats(max_value=-1e-9, allow_nan=False) | nan_inf | text,  # every float field is >= 0
}
ARRAY_KINDS = {"array", "array_nd", "elementwise", "batch", "labels", "table", "params"}


def _inject(value, i, bad):
    """``value`` (array, tensor or (W, b) list) with entry ``i`` (flattened) set to ``bad``."""
    if isinstance(value, list):  # params: the first layer's W
        W, b = value[0]
        return [(_inject(W, i, bad), b)] + list(value[1:])
    if isinstance(value, torch.Tensor):
        out = value.detach().clone().double()
    else:
        out = np.array(value, dtype=float)
    out.reshape(-1)[i % out.reshape(-1).shape[0]] = bad
    return out


def _resolve(kind, bad, valid):
    if isinstance(bad, tuple) and bad[:1] == ("INJECT",):
        return _inject(valid, bad[1], bad[2])
    if kind == "widths":
        return sweep._widths_bad(valid, bad)
    if callable(bad) and kind != "callable":
        return bad(valid)
    return bad


CASES = sorted((key, arg) for key, (_, _, factory) in SPECS.items()
               for arg, (_, kind) in factory().items() if kind is not None)


def _check(key, arg, fn, call, label):
    with pytest.raises((ValueError, TypeError)) as err:
        fn(**call)
    msg = str(err.value)
    assert arg in msg or arg.replace("_", " ") in msg, f"{key}({arg}={label}): {msg}"


@pytest.mark.parametrize("key, arg", CASES, ids=[f"{k}-{a}" for k, a in CASES])
def test_bad_argument_raises_a_clear_error(key, arg):
    """Every fixed bad value of the argument's kind (the sweep's), then random ones (Hypothesis)."""
    module, name, factory = SPECS[key]
    fn = sweep.function(module, name)
    fn(**{k: v for k, (v, _) in factory().items()})  # the valid call works
    kind = factory()[arg][1]
    defaults = sweep._defaults(fn)
    for label, bad in sweep.BAD[kind].items():
        if label == "None" and defaults.get(arg, "-") is None:
            continue  # None is this argument's default: intended
        call = {k: v for k, (v, _) in factory().items()}
        try:
            call[arg] = _resolve(kind, bad, call[arg])
        except Exception:  # noqa: BLE001  (this bad value does not apply to this valid value)
            continue
        _check(key, arg, fn, call, label)
    if kind not in EXTRA and kind not in ARRAY_KINDS - {"table"}:
        return
    random_bad = []
    if kind in EXTRA:
        random_bad.append(EXTRA[kind])
    if kind in ARRAY_KINDS - {"table"}:
        random_bad.append(st.tuples(st.integers(0, 10**6), nan_inf).map(lambda t: ("INJECT",) + t))

    @settings(max_examples=max(3, settings().max_examples // 2),
              deadline=None if name in TRAINING else settings().deadline)
    @given(st.one_of(*random_bad))
    def prop(bad):
        call = {k: v for k, (v, _) in factory().items()}
        call[arg] = _resolve(kind, bad, call[arg])
        _check(key, arg, fn, call, repr(bad)[:40])

    prop()


# ---- valid inputs: a finite result of the documented shape (the functions and methods added to the sweep)

from hypothesis.extra import numpy as hnp  # noqa: E402

small = st.floats(-5, 5, allow_nan=False, width=64)


@given(st.integers(1, 6), st.sampled_from([0.0, 0.1, 0.5, 0.9]), st.integers(1, 3))
def test_leaky_1d_valid_inputs(changes, alpha, d):
    from lib import boolean as B
    from lib import leaky_1d as LK

    width = LK.min_width_1d(changes, alpha)
    assert width in (changes - 1, changes)
    net = LK.alternating_network(changes, alpha)
    assert net[0][0].shape == (width, 1) and net[1][0].shape == (1, width)
    out = B.network_output(net, np.arange(changes + 1.0)[:, None], alpha)
    assert out.shape == (changes + 1,) and np.isfinite(out).all()
    assert (np.sign(out) == [(-1) ** (j + 1) for j in range(changes + 1)]).all()  # -, +, -, ...
    lifted = LK.lift(net, np.full(d, 0.5), 1.0)
    assert lifted[0][0].shape == (width, d) and all(np.isfinite(W).all() for W, _ in lifted)


@given(st.integers(1, 4), st.integers(1, 5), st.integers(0, 6), st.data())
def test_network_methods_valid_inputs(d0, d1, n, data):
    from lib import boolean as B
    from lib import equivalence as E
    from lib import nets
    from lib import pruning as P

    X = torch.from_numpy(data.draw(hnp.arrays(np.float64, (n, d0), elements=small))).float()
    out = nets.BatchedMLP([d0, d1, 2], n_models=3)(X)
    assert out.shape == (3, n, 2) and torch.isfinite(out).all()
    out = B.StackedMLP([d0, d1, 1], 2, 0.1, 0).forward(X)
    assert out.shape == (n, 2) and torch.isfinite(out).all()
    model = P.MaskedMLP(d0, d1, 2, 3, 0.1, 0)
    out = model.forward(X)
    assert out.shape == (n, 3) and torch.isfinite(out).all()
    assert model.select([2, 0]).forward(X).shape == (n, 2)
    net = E.random_network([d0, d1, 1], seed=0)
    Xn = X.double().numpy()
    oracle = E.CountingOracle(lambda Z: E.forward(net, Z)[:, 0] if len(Z) else np.zeros(0))
    assert oracle(Xn).shape == (n,) and oracle.n_queries == n and oracle.n_calls == 1
    for f in (nets.forward_f64, nets.activation_patterns):
        if n:
            assert f(net, Xn).shape == ((n, 1) if f is nets.forward_f64 else (n, d1))


@given(st.integers(0, 3), st.data())
def test_cnn_methods_valid_inputs(n, data):
    from lib import maxmargin as MM
    from lib import pruning as P

    X = torch.from_numpy(data.draw(hnp.arrays(np.float64, (n, 1, 8, 8), elements=small))).float()
    out = P.PrunableCNN(1, 8, channels=2, classes=3, seed=0)(X)
    assert out.shape == (n, 3) and torch.isfinite(out).all()
    out = MM.Table31CNN(image_size=8)(X)
    assert out.shape == (n,) and torch.isfinite(out).all()


@given(st.integers(2, 3), st.integers(0, 2**16))
def test_inductive_bias_valid_inputs(d, seed):
    from lib import maxmargin as MM

    X, y = MM.orthogonally_separable_gaussian(12, d, seed=seed)
    W = np.random.default_rng(seed).standard_normal((4, d))
    G = MM.G_value(W, X, y)
    assert G.shape == (4,) and np.isfinite(G).all()
    assert MM.sector_is_feasible(X, np.sign(X @ W[0]))  # the sector of an actual w is not empty
    dirs, counts, unresolved = MM.extremal_directions(X, y, n_starts=10, seed=seed)
    assert dirs.shape == (len(counts), d) and counts.sum() + unresolved == 10
    assert np.allclose(np.linalg.norm(dirs, axis=1), 1.0)


@given(st.integers(1, 4), st.integers(0, 2**16))
def test_flip_sets_valid_inputs(d1, seed):
    from lib import equivalence as E

    res = E.flip_sets(E.random_network([2, d1, 1], seed=seed))
    assert res["subsets"][0] == () and np.isfinite(res["margin"]) and res["margin"] >= 0
    assert set(res["hypotheses"]) == {"crosses", "distinct", "outputs_nonzero"}


def test_every_public_function_is_swept():
    """Every public function, class and method of the swept modules has a valid call in ``SPECS`` (so the
    tests above cover it) or a stated reason in ``NOT_SWEPT``; a new function without either fails here."""
    assert sweep.unswept() == [], "give these a SPECS entry in scripts/bad_input_sweep.py (or a reason in NOT_SWEPT)"


def test_unswept_sees_a_new_public_function(monkeypatch):
    """The completeness check is not vacuous: a public function added to a module shows up."""
    import lib.nets

    def brand_new(x):
        return x

    brand_new.__module__ = "lib.nets"
    monkeypatch.setattr(lib.nets, "brand_new", brand_new, raising=False)
    assert "nets.brand_new" in sweep.unswept()


# ---- arguments that must agree with another one, and degenerate values (issue 37)

MISMATCH_CASES = sorted((key, arg, label) for key in SPECS for arg, bads in sweep.MISMATCH.get(key, {}).items()
                        for label in bads)


def test_every_mismatch_entry_names_a_swept_function():
    assert set(sweep.MISMATCH) <= set(SPECS), set(sweep.MISMATCH) - set(SPECS)


@pytest.mark.parametrize("key, arg, label", MISMATCH_CASES, ids=[f"{k}-{a}-{lb}" for k, a, lb in MISMATCH_CASES])
def test_mismatched_or_degenerate_argument_raises_a_clear_error(key, arg, label):
    """A value valid on its own that does not agree with another argument (or a degenerate one that would
    give NaN) raises a ValueError/TypeError naming the argument."""
    module, name, factory = SPECS[key]
    fn = sweep.function(module, name)
    call = {k: v for k, (v, _) in factory().items()}
    fn(**call)
    call[arg] = sweep.MISMATCH[key][arg][label](call.get(arg))
    _check(key, arg, fn, call, label)


@given(st.sampled_from([c for _, c in sweep.CONFIG_CLASSES if c != "SentenceGrammar"]), st.data())
def test_config_with_a_random_bad_field_names_it(cls_name, data):
    """Any configuration with one field drawn of the wrong type (a str, None, a bool for a number) names that field."""
    import dataclasses

    module = dict((c, m) for m, c in sweep.CONFIG_CLASSES)[cls_name]
    cls = getattr(sweep.importlib.import_module(f"lib.{module}"), cls_name)
    fields = [f for f in dataclasses.fields(cls) if isinstance(getattr(cls(), f.name), (int, float, tuple))]
    field = data.draw(st.sampled_from(fields)).name
    bad = data.draw(st.sampled_from([None, "3", b"x", {"a": 1}]) | (st.just(True) if not isinstance(getattr(cls(), field), tuple) else st.nothing()))
    with pytest.raises((ValueError, TypeError), match=field):
        cls(**{field: bad})


@given(st.integers(1, 6), st.integers(1, 4), st.integers(1, 3), st.integers(0, 2**16))
def test_degenerate_values_are_refused_or_defined(n, d, k, seed):
    """Zero vectors that would be divided by their norm are refused; Y = 0 has relative residual 0; two empty
    sentences match 1 (the matrix stays finite, symmetric, with a unit diagonal)."""
    from lib import landscape as LS
    from lib import mae
    from lib import maxmargin as MM

    rng = np.random.default_rng(seed)
    W, a = rng.standard_normal((n + 1, d)), np.r_[1.0, -1.0, rng.standard_normal(n - 1)]
    w = rng.standard_normal(d) + 3.0
    with pytest.raises(ValueError, match="w_plus"):
        MM.neuron_alignment(W, a, np.zeros(d), w)
    with pytest.raises(ValueError, match="W must be a non-zero"):
        MM.theorem_residuals(np.zeros((n + 1, d)), a, w, w)
    assert np.isfinite(MM.theorem_residuals(W, a, w, w)).all()
    lam, res = LS.exact_fit(rng.standard_normal((n, d)), np.zeros((n, k)))
    assert res == 0.0 and not lam.any()
    words = ["a", "b", "c"]
    sentences = [" ".join(rng.choice(words, size=rng.integers(0, 4))) for _ in range(n)] + [""]
    M = mae.word_match_matrix(sentences)
    assert torch.isfinite(M).all() and torch.equal(M, M.T) and (M.diagonal() == 1).all()
