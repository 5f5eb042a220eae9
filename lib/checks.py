"""Statistical checks that assert *and* record what they compare (every chapter's check cells).

A chapter's claim about a trained model ("exit 1 gains at least a point") holds on one machine for
one seed, and may not on a reader's CPU, whose matrix kernels give other numbers for the same seed.
So every statistical check records the quantity it compares, the threshold and the margin between
them; ``python -m lib.sweep`` runs a notebook over many seeds and reports each check's smallest
margin against its seed-to-seed spread (``results/<chapter>/seeds.json``). Exact checks (identities
that hold to float precision whatever the seed) stay plain ``assert`` statements.

    from lib.checks import check
    check("exit-1 gain of D over EW (points)", gain, ">=", 1.0)

A claim checked on the committed full-scale run (``results/<chapter>/full.json``, read at every
scale) is not a property of this run: :func:`check_full_run` asserts it the same way, prefixes its
name with ``[full run]`` and marks its record ``committed``, so that the seed sweep reports it as a
constant (the same value in every run) instead of giving it a margin against a seed-to-seed spread.
Compute such a value from the full run's per-seed arrays, not from a summary typed into the file.

When the environment variable ``REPRO_CHECKS_FILE`` names a file, each check appends one JSON line
to it (this is how the sweep collects the records of a notebook running in its own kernel).
"""

from __future__ import annotations

import json
import math
import operator
import os

import numpy as np

CHECKS_FILE_ENV = "REPRO_CHECKS_FILE"
OPERATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
FULL_RUN_PREFIX = "[full run] "  # the name of every check of the committed full run starts with it

RECORDS: list[dict] = []  # this process's checks, in the order they ran


def _worst(values: np.ndarray, op: str) -> float:
    """The element of ``values`` closest to failing ``op``: the minimum for >=/>, the maximum for <=/<."""
    return float(values.min() if op in (">=", ">") else values.max())


def margin(value: float, op: str, threshold: float) -> float:
    """How far ``value`` is on the passing side of ``threshold`` (negative: the check fails)."""
    if op not in OPERATORS:
        raise ValueError(f"op must be one of {sorted(OPERATORS)}, got {op!r}")
    return float(value - threshold) if op in (">=", ">") else float(threshold - value)


def _emit(record: dict) -> None:
    RECORDS.append(record)
    path = os.environ.get(CHECKS_FILE_ENV)
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps(record) + "\n")


def begin(chapter: str) -> None:
    """Mark the start of a chapter's run (called by ``lib.notebook.setup``): the sweep reads its key."""
    if not isinstance(chapter, str) or not chapter:
        raise ValueError(f"chapter must be a non-empty string, got {chapter!r}")
    RECORDS.clear()
    _emit({"chapter": chapter})


def check(name: str, value, op: str, threshold: float) -> float:
    """Assert ``value op threshold`` and record the comparison; returns the margin.

    ``value`` is a number or an array (then every element must pass, and the element closest to
    failing is the one recorded). Raises ``AssertionError`` naming the check, the value and the
    threshold when it fails, after recording it, so that a sweep sees the failing margin too.
    """
    return _check(name, value, op, threshold, committed=False)


def check_full_run(name: str, value, op: str, threshold: float) -> float:
    """:func:`check` for a value read from the committed full-scale results (not computed by this run).

    The name shown and recorded is ``"[full run] " + name``; the record carries ``committed: True``,
    which :mod:`lib.sweep` reports as a constant check. Returns the margin.
    """
    return _check(name, value, op, threshold, committed=True)


def _check(name, value, op, threshold, committed: bool) -> float:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a check needs a descriptive name, got {name!r}")
    if op not in OPERATORS:
        raise ValueError(f"op must be one of {sorted(OPERATORS)}, got {op!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)) \
            or not math.isfinite(threshold):
        raise ValueError(f"threshold of check {name!r} must be a finite number, got {threshold!r}")
    if committed and not name.startswith(FULL_RUN_PREFIX):
        name = FULL_RUN_PREFIX + name
    values = np.asarray(value, dtype=float).ravel()
    if values.size == 0:
        raise ValueError(f"check {name!r} got no values")
    worst = _worst(values, op) if np.isfinite(values).all() else float("nan")
    passed = bool(np.isfinite(values).all() and OPERATORS[op](values, threshold).all())
    gap = margin(worst, op, float(threshold)) if math.isfinite(worst) else float("-inf")
    _emit({"check": name, "value": worst, "op": op, "threshold": float(threshold),
           "margin": gap if math.isfinite(gap) else None, "passed": passed, "n_values": int(values.size),
           **({"committed": True} if committed else {})})
    if not passed:
        shown = worst if math.isfinite(worst) else values.tolist()
        raise AssertionError(f"check failed: {name}: {shown} {op} {threshold} does not hold")
    return gap
