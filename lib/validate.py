"""One vocabulary for checking the arguments of every public function of ``lib`` at its boundary.

Each helper takes the value and the argument's name, returns the value in the form the function
computes with (an ``int``, a ``float``, a float64 array, the tensor itself) and otherwise raises an
error whose message names the argument, says what was expected and shows what it got::

    lr = validate.positive(lr, "lr")            # ValueError: lr must be a finite number > 0, got -1.0
    X = validate.array(X, "X", ndim=2)          # ValueError: X must be a 2-D array, got shape (5,)
    n = validate.positive_int(n, "n")           # TypeError:  n must be an int, got str '3'

A wrong *type* raises :class:`ArgumentTypeError`, which is both a ``TypeError`` and a ``ValueError``
(callers and tests that catch ``ValueError`` for any bad argument keep working); a value of the right
type outside its domain raises :class:`ArgumentValueError` (a ``ValueError``). Training functions use
:func:`finite_loss` to stop at the first NaN or infinite loss with the step and the likely cause.

The checks run once per call, at the boundary; nothing here runs per training step except
:func:`finite_loss` on a loss value the trainer already holds.
"""

from __future__ import annotations

import math
import numbers
from typing import Iterable

import sys

import numpy as np

__all__ = [
    "ArgumentTypeError", "ArgumentValueError", "TrainingDivergedError", "describe", "integer",
    "positive_int", "nonnegative_int", "seed", "real", "positive", "nonnegative", "fraction",
    "slope", "choice", "boolean", "array", "tensor", "labels", "callable_", "sequence",
    "finite_loss", "instance", "is_int", "config", "each", "items", "one_of", "of_type", "same_size",
]


def _is_tensor(value) -> bool:
    """Whether ``value`` is a torch tensor, without importing torch (``lib.scale`` stays light)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


class ArgumentValueError(ValueError):
    """An argument of the right type but outside its domain (negative size, NaN, wrong shape...)."""


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type; also a ``ValueError`` so that one ``except ValueError`` catches
    every bad argument."""


class TrainingDivergedError(FloatingPointError):
    """The training loss became NaN or infinite (raised by the trainers through :func:`finite_loss`)."""


def describe(value) -> str:
    """A short description of ``value`` for an error message (type, and shape or repr)."""
    if _is_tensor(value):
        return f"tensor of shape {tuple(value.shape)} and dtype {value.dtype}"
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    if isinstance(value, (bool, int, float, np.number)) or value is None:
        return text
    return f"{type(value).__name__} {text}"


def _type_error(name: str, expected: str, value):
    return ArgumentTypeError(f"{name} must be {expected}, got {describe(value)}")


def _value_error(name: str, expected: str, value):
    return ArgumentValueError(f"{name} must be {expected}, got {describe(value)}")


# ----------------------------------------------------------------------------------------------
# scalars

def integer(value, name: str, *, min: int | None = None, max: int | None = None) -> int:
    """``value`` as an ``int`` in ``[min, max]`` (bounds optional). ``bool`` and floats are rejected,
    numpy integers and 0-d integer tensors accepted."""
    if _is_tensor(value) and value.ndim == 0 and not value.is_floating_point() \
            and not value.dtype.is_complex and str(value.dtype) != "torch.bool":
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _type_error(name, "an int", value)
    value = int(value)
    if (min is not None and value < min) or (max is not None and value > max):
        parts = ([] if min is None else [f">= {min}"]) + ([] if max is None else [f"<= {max}"])
        raise _value_error(name, "an int " + " and ".join(parts), value)
    return value


def is_int(value) -> bool:
    """Whether ``value`` is a Python ``int`` and not a ``bool`` (``True`` is an ``int`` to Python, never a
    size or a count to this book)."""
    return isinstance(value, int) and not isinstance(value, bool)


def positive_int(value, name: str, *, max: int | None = None) -> int:
    """An ``int >= 1`` (a size, a count, a number of steps)."""
    return integer(value, name, min=1, max=max)


def nonnegative_int(value, name: str, *, max: int | None = None) -> int:
    """An ``int >= 0`` (an index, a number of extra steps that may be zero)."""
    return integer(value, name, min=0, max=max)


def seed(value, name: str = "seed", *, allow_none: bool = False) -> int | None:
    """A random seed: an ``int >= 0``; ``None`` too when ``allow_none`` (fresh, unseeded randomness)."""
    if value is None and allow_none:
        return None
    if value is None:
        raise _type_error(name, "an int >= 0 (a random seed)", value)
    return integer(value, name, min=0)


def real(value, name: str, *, min: float | None = None, max: float | None = None,
         min_open: bool = False, max_open: bool = False, finite: bool = True) -> float:
    """``value`` as a ``float`` (finite unless ``finite=False``) within the optional bounds; an open
    bound excludes the endpoint. ``bool``, strings and ``None`` are rejected."""
    if (_is_tensor(value) or isinstance(value, np.ndarray)) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _type_error(name, "a real number", value)
    value = float(value)
    parts = []
    if min is not None:
        parts.append(f"{'>' if min_open else '>='} {min:g}")
    if max is not None:
        parts.append(f"{'<' if max_open else '<='} {max:g}")
    expected = ("a finite number" if finite else "a number") + (" " + " and ".join(parts) if parts else "")
    if math.isnan(value) or (finite and math.isinf(value)):
        raise _value_error(name, expected, value)
    if min is not None and (value < min or (min_open and value == min)):
        raise _value_error(name, expected, value)
    if max is not None and (value > max or (max_open and value == max)):
        raise _value_error(name, expected, value)
    return value


def positive(value, name: str, *, max: float | None = None) -> float:
    """A finite ``float > 0`` (a learning rate, a temperature, a scale)."""
    return real(value, name, min=0.0, min_open=True, max=max)


def nonnegative(value, name: str, *, max: float | None = None) -> float:
    """A finite ``float >= 0`` (a weight decay, a noise level, a tolerance)."""
    return real(value, name, min=0.0, max=max)


def fraction(value, name: str, *, low_open: bool = False, high_open: bool = True) -> float:
    """A ``float`` in ``[0, 1)`` by default (a momentum, a fraction of a data set); the flags open or
    close either end."""
    return real(value, name, min=0.0, max=1.0, min_open=low_open, max_open=high_open)


def slope(value, name: str = "alpha") -> float:
    """A leaky-ReLU negative slope in ``[0, 1)`` (0 is the plain ReLU)."""
    return fraction(value, name)


def interval(value, name: str) -> tuple[float, float]:
    """A finite pair ``(lo, hi)`` with ``lo < hi``, as floats (domains of chapters 01 and 08)."""
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ArgumentValueError(f"{name} must be a pair (lo, hi), got {describe(value)}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ArgumentValueError(f"{name} must be a finite interval with lo < hi, got {value!r}")
    return lo, hi


def choice(value, name: str, options: Iterable):
    """``value`` if it is one of ``options`` (compared with ``==``), else a ValueError listing them."""
    options = tuple(options)
    try:
        ok = any(value == o and type(value) is type(o) for o in options)
    except Exception:  # noqa: BLE001  (an array compared with a string...)
        ok = False
    if not ok:
        raise _value_error(name, f"one of {options}", value)
    return value


def boolean(value, name: str) -> bool:
    """A ``bool`` (numpy bools accepted); ints and strings are rejected."""
    if not isinstance(value, (bool, np.bool_)):
        raise _type_error(name, "a bool", value)
    return bool(value)


def callable_(value, name: str):
    """``value`` if it can be called."""
    if not callable(value):
        raise _type_error(name, "callable", value)
    return value


def sequence(value, name: str, *, min_len: int = 0) -> list:
    """``value`` (a list, tuple, range, 1-D array or other iterable; not a string, dict or 0-d array)
    as a list of at least ``min_len`` items."""
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__") \
            or (getattr(value, "ndim", 1) == 0):
        raise _type_error(name, "a list or tuple", value)
    value = list(value)
    if len(value) < min_len:
        raise _value_error(name, f"a sequence of at least {min_len} item(s)", value)
    return value


# ----------------------------------------------------------------------------------------------
# arrays and tensors

def _shape_ok(shape, want) -> bool:
    return len(shape) == len(want) and all(w is None or s == w for s, w in zip(shape, want))


def _shape_text(want) -> str:
    return "(" + ", ".join("n" if w is None else str(w) for w in want) + ("," if len(want) == 1 else "") + ")"


def _check_shape(name: str, shape, ndim, want, nonempty: bool, value, agree: str | None = None) -> None:
    if ndim is not None:
        ndims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if len(shape) not in ndims:
            raise _value_error(name, f"an array with {' or '.join(map(str, ndims))} dimensions "
                                     f"({' or '.join(f'{d}-D' for d in ndims)})", value)
    if want is not None and not _shape_ok(tuple(shape), tuple(want)):
        raise _value_error(name, f"an array of shape {_shape_text(want)}" + (f" to agree with {agree}" if agree else ""),
                           value)
    if nonempty and math.prod(shape) == 0:
        raise _value_error(name, "non-empty", value)


def array(value, name: str, *, ndim=None, shape=None, finite: bool = True, nonempty: bool = True,
          dtype=np.float64, integer: bool = False, agree: str | None = None) -> np.ndarray:
    """``value`` (anything numpy reads as a real numeric array, tensors included) as an array of
    ``dtype`` (float64 by default; ``integer=True`` also requires whole numbers and returns int64).

    ``ndim``: an int or a tuple of allowed numbers of dimensions; ``shape``: a tuple with ``None`` for
    free axes; ``finite``: no NaN or inf; ``nonempty``: at least one element; ``agree``: the argument(s)
    that ``shape`` comes from, named in the error (``Y must be an array of shape (5, n) to agree with X``).
    """
    if _is_tensor(value):
        value = value.detach().cpu().numpy()
    if value is None or isinstance(value, (str, bytes, dict, set)):
        raise _type_error(name, "a numeric array", value)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise _type_error(name, f"a numeric array ({e})", value) from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool) \
            or np.iscomplexobj(arr):
        raise _type_error(name, "a numeric array of real numbers", arr)
    _check_shape(name, arr.shape, ndim, shape, nonempty, arr, agree)
    if finite and np.issubdtype(arr.dtype, np.floating) and not np.isfinite(arr).all():
        raise _value_error(name, "finite (no NaN or inf)", arr)
    if integer:
        if np.issubdtype(arr.dtype, np.floating) and not (arr == np.round(arr)).all():
            raise _value_error(name, "an array of whole numbers", arr)
        return arr.astype(np.int64)
    return arr.astype(dtype, copy=False) if dtype is not None else arr


def tensor(value, name: str, *, ndim=None, shape=None, finite: bool = True, nonempty: bool = True,
           floating: bool | None = None, convert: bool = False, agree: str | None = None):
    """``value`` checked as a torch tensor and returned unchanged (no copy, no dtype change).

    ``floating``: True requires a floating dtype, False an integer one, None either. With
    ``convert`` a numpy array or nested list is first turned into a tensor (``torch.as_tensor``); ``agree``
    as in :func:`array`.
    The finiteness check is one vectorised pass, made once per call.
    """
    import torch

    if convert and not isinstance(value, torch.Tensor) and value is not None \
            and not isinstance(value, (str, bytes)):
        try:
            value = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError):
            raise _type_error(name, "a tensor (or an array convertible to one)", value) from None
    if not isinstance(value, torch.Tensor):
        raise _type_error(name, "a torch.Tensor", value)
    if floating is True and not value.is_floating_point():
        raise _type_error(name, "a floating-point tensor", value)
    if floating is False and (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool):
        raise _type_error(name, "an integer tensor", value)
    _check_shape(name, tuple(value.shape), ndim, shape, nonempty, value, agree)
    if finite and value.is_floating_point() and not bool(torch.isfinite(value).all()):
        raise _value_error(name, "finite (no NaN or inf)", value)
    return value


def labels(value, name: str, n_classes: int | None = None, *, n: int | None = None, rows_of: str | None = None,
           classes_of: str | None = None):
    """Class indices (an integer tensor or array, or a float one holding whole numbers) in
    ``[0, n_classes)``; ``n``: the number of rows it must have, those of the argument ``rows_of``;
    ``classes_of``: the argument whose shape gives ``n_classes`` (each named in the error when given).
    Returned unchanged."""
    data = value.detach().cpu().numpy() if _is_tensor(value) else value
    arr = array(data, name, dtype=None, nonempty=False)
    if np.issubdtype(arr.dtype, np.floating) and not (arr == np.round(arr)).all():
        raise _value_error(name, "whole-number class indices", value)
    if n is not None and (arr.ndim == 0 or arr.shape[-1] != n):
        raise _value_error(name, f"one label per row{' of ' + rows_of if rows_of else ''} ({n} rows)", value)
    if arr.size and (arr.min() < 0 or (n_classes is not None and arr.max() >= n_classes)):
        hi = "" if n_classes is None else f" and < {n_classes} (the number of classes{', of ' + classes_of if classes_of else ''})"
        raise _value_error(name, f"class indices >= 0{hi}; it holds {arr.min()}..{arr.max()}, as", value)
    return value


# ----------------------------------------------------------------------------------------------
# training

def finite_loss(loss, step, lr=None, what: str = "loss") -> None:
    """Raise :class:`TrainingDivergedError` if ``loss`` (a float, array or tensor already computed by
    the trainer) holds a NaN or inf, naming ``step`` and the likely cause."""
    if _is_tensor(loss):
        bad = not bool(sys.modules["torch"].isfinite(loss).all())
    else:
        bad = not bool(np.isfinite(np.asarray(loss, dtype=float)).all())
    if bad:
        hint = f" with lr={lr!r}" if lr is not None else ""
        raise TrainingDivergedError(
            f"the training {what} became NaN or infinite by step {step}{hint}: the learning rate is "
            "most likely too large (or the data or initial weights hold huge values); lower lr and retry")


def instance(value, name: str, cls, what: str | None = None):
    """``value`` if it is an instance of ``cls`` (a class or tuple of classes); ``what`` names the
    expected kind in the message (default: the class names)."""
    if not isinstance(value, cls):
        if what is None:
            classes = cls if isinstance(cls, tuple) else (cls,)
            what = "a " + " or ".join(c.__name__ for c in classes)
        raise _type_error(name, what, value)
    return value


# ----------------------------------------------------------------------------------------------
# configuration dataclasses and arguments that must agree

def config(obj, rules: dict) -> None:
    """Check the fields of a configuration dataclass ``obj`` (call it from its ``__post_init__``), so that
    a bad field fails at construction with its name, not deep inside training.

    ``rules`` maps a field name to a rule ``rule(value, name)``: any helper of this module with that
    signature (:func:`positive_int`, :func:`positive`, :func:`fraction`...), or one made by :func:`each`,
    :func:`items`, :func:`one_of`, :func:`of_type`. The error names the field as ``Class.field``. The
    fields are only checked, never converted (a config's values are what the chapter computes with)."""
    owner = type(obj).__name__
    for field, rule in rules.items():
        rule(getattr(obj, field), f"{owner}.{field}")


def each(rule, *, min_len: int = 0, length: int | None = None):
    """A rule for a tuple field whose every item passes ``rule`` (named ``field[i]``), with at least
    ``min_len`` items (exactly ``length`` if given)."""
    def check(value, name):
        values = sequence(value, name, min_len=min_len)
        if length is not None and len(values) != length:
            raise _value_error(name, f"a sequence of {length} item(s)", value)
        for i, v in enumerate(values):
            rule(v, f"{name}[{i}]")
        return value
    return check


def items(*rules):
    """A rule for a fixed-length tuple field whose ``i``-th item passes ``rules[i]`` (an ``(eta, steps)``
    phase, an image shape ``(C, H, W)``)."""
    def check(value, name):
        values = sequence(value, name)
        if len(values) != len(rules):
            raise _value_error(name, f"a tuple of {len(rules)} items", value)
        for i, (rule, v) in enumerate(zip(rules, values)):
            rule(v, f"{name}[{i}]")
        return value
    return check


def one_of(*options):
    """A rule: the value is one of ``options`` (:func:`choice`)."""
    return lambda value, name: choice(value, name, options)


def of_type(cls, what: str | None = None):
    """A rule: the value is an instance of ``cls`` (:func:`instance`)."""
    return lambda value, name: instance(value, name, cls, what)


def same_size(n1: int, name1: str, n2: int, name2: str, what: str = "size") -> None:
    """Raise :class:`ArgumentValueError` naming both arguments when two sizes that must agree do not
    (the width of ``X`` and the input width of a network, the rows of ``X`` and ``y``...)."""
    if n1 != n2:
        raise ArgumentValueError(f"{name1} and {name2} must agree in {what}, got {n1} and {n2}")

