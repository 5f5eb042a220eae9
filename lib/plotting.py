"""One figure style for the whole book, and the plots several chapters share.

Call :func:`use_book_style` once per notebook (the bootstrap of every chapter does it via
:func:`lib.notebook.setup`). :func:`band` draws a mean curve with a 95% interval over seeds;
:func:`decision_regions` shades a 2-D classifier's prediction.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

BOOK_STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "figure.constrained_layout.use": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "lines.linewidth": 1.8,
    "image.cmap": "viridis",
    "axes.prop_cycle": mpl.cycler(color=["#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                         "#E69F00", "#56B4E9", "#F0E442", "#000000"]),
}
"""Colour-blind-safe palette (Okabe–Ito), light grid, no top/right spines."""


def use_book_style() -> None:
    """Apply the book's matplotlib style (idempotent)."""
    mpl.rcParams.update(BOOK_STYLE)


def band(ax, x, ys, label: str | None = None, color=None, z: float = 1.96):
    """Plot the mean of ``ys`` (shape ``(n_seeds, len(x))``) with a ``z``-standard-error band.

    ``z = 1.96`` gives the normal-approximation 95% interval of the mean over seeds.
    """
    x, ys = np.asarray(x, dtype=float), np.asarray(ys, dtype=float)
    if ys.ndim != 2 or ys.shape[1] != x.shape[0] or ys.shape[0] < 1:
        raise ValueError(f"ys must have shape (n_seeds, {x.shape[0]}), got {ys.shape}")
    if not np.all(np.isfinite(ys)):
        raise ValueError("ys contains NaN or infinite values")
    mean = ys.mean(0)
    half = z * ys.std(0, ddof=1) / np.sqrt(ys.shape[0]) if ys.shape[0] > 1 else np.zeros_like(mean)
    (line,) = ax.plot(x, mean, label=label, color=color)
    ax.fill_between(x, mean - half, mean + half, color=line.get_color(), alpha=0.2, linewidth=0)
    return line


def decision_regions(ax, predict, X, y, resolution: int = 200, margin: float = 0.3):
    """Shade ``predict`` (maps an ``(m, 2)`` array to scores; > 0 is class 1) over the data's box.

    Draws the zero level set and the points of ``X`` coloured by ``y``; returns the contour set.
    """
    X, y = np.asarray(X, dtype=float), np.asarray(y)
    if X.ndim != 2 or X.shape[1] != 2 or len(X) == 0:
        raise ValueError(f"X must be a non-empty (n, 2) array, got shape {X.shape}")
    if y.shape != (len(X),):
        raise ValueError(f"y must have shape ({len(X)},), got {y.shape}")
    lo, hi = X.min(0) - margin, X.max(0) + margin
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], resolution), np.linspace(lo[1], hi[1], resolution))
    scores = np.asarray(predict(np.c_[gx.ravel(), gy.ravel()]), dtype=float).reshape(gx.shape)
    ax.contourf(gx, gy, scores > 0, levels=[-0.5, 0.5, 1.5], colors=["#cfe3f3", "#f6d5c3"], alpha=0.8)
    cs = ax.contour(gx, gy, scores, levels=[0.0], colors="k", linewidths=1.0)
    ax.scatter(*X[y == 0].T, s=10, c="#0072B2", label="class 0")
    ax.scatter(*X[y == 1].T, s=10, c="#D55E00", label="class 1")
    ax.set_aspect("equal")
    return cs

