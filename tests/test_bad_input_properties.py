"""Property-based bad-input tests (Hypothesis) for every public function of the thirteen lib modules.

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
            "train_mae", "time_inference", "digits_protocol", "make_mnist1d", "load_digits_split"}

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
    fn = getattr(importlib.import_module(f"lib.{module}"), name)
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
