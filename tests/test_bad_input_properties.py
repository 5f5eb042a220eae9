"""Property-based bad-input tests (Hypothesis) for every public function of the thirteen lib modules.

Each public function has one valid call and a kind per argument (``scripts/bad_input_sweep.py``,
``SPECS``). A property per function: the valid call succeeds, and the call with *one* argument replaced
by a bad value that Hypothesis draws for that argument's kind (a non-positive size, a NaN or inf at a
random position of an array, a label out of range, a wrong type, ...) raises a ``ValueError`` or
``TypeError`` whose message names that argument. ``HYPOTHESIS_PROFILE=thorough`` draws many more.
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


def _bad_strategy(kind, valid):
    fixed = []
    for label, bad in sweep.BAD[kind].items():
        fixed.append((label, bad))
    base = st.sampled_from(fixed)
    strategies = [base]
    if kind in EXTRA:
        strategies.append(EXTRA[kind].map(lambda v: ("random", v)))
    if kind in ARRAY_KINDS and kind != "table":
        strategies.append(st.tuples(st.integers(0, 10**6), nan_inf).map(lambda t: ("random NaN/inf", ("INJECT",) + t)))
    return st.one_of(*strategies)


def _resolve(kind, bad, valid):
    if isinstance(bad, tuple) and bad[:1] == ("INJECT",):
        return _inject(valid, bad[1], bad[2])
    if kind == "widths":
        return sweep._widths_bad(valid, bad)
    if callable(bad) and kind != "callable":
        return bad(valid)
    return bad


@pytest.mark.parametrize("key", sorted(SPECS))
def test_bad_argument_raises_a_clear_error(key):
    module, name, factory = SPECS[key]
    fn = getattr(importlib.import_module(f"lib.{module}"), name)
    fn(**{k: v for k, (v, _) in factory().items()})  # the valid call works
    kinds = {k: kind for k, (_, kind) in factory().items() if kind is not None}
    defaults = sweep._defaults(fn)

    @settings(deadline=None if name in TRAINING else settings().deadline)
    @given(st.data())
    def prop(data):
        arg = data.draw(st.sampled_from(sorted(kinds)), label="argument")
        call = {k: v for k, (v, _) in factory().items()}
        label, bad = data.draw(_bad_strategy(kinds[arg], call[arg]), label="bad value")
        if label == "None" and defaults.get(arg, "-") is None:
            return  # None is this argument's default: intended
        try:
            bad = _resolve(kinds[arg], bad, call[arg])
        except Exception:  # noqa: BLE001  (this bad value does not apply to this valid value)
            return
        call[arg] = bad
        with pytest.raises((ValueError, TypeError)) as err:
            fn(**call)
        msg = str(err.value)
        assert arg in msg or arg.replace("_", " ") in msg, f"{key}({arg}={label}): {msg}"

    prop()
