"""Shared code of the book *ReLU networks, executable*.

Core modules (used by every chapter): :mod:`lib.scale` (run scales and seeds), :mod:`lib.nets`
(explicit ReLU MLPs and batched ensembles), :mod:`lib.train` (trainers with progress bars),
:mod:`lib.data` (offline data, online loaders for the paper scale), :mod:`lib.plotting` (the book's
figure style), :mod:`lib.results` (metrics with provenance, the "Paper vs this book" table) and
:mod:`lib.notebook` (helpers for the chapter notebooks). Chapter algorithms live in their own modules.
"""

__version__ = "0.1.0"
