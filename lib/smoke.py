"""The paper-path smoke run's configuration (issue 22; ``REPRO_SCALE=paper REPRO_PAPER_SMOKE=1``).

A smoke run is a test of the paper path's code, not a fourth scale (:func:`lib.scale.paper_smoke`):
:meth:`lib.scale.ChapterScales.for_scale` hands a chapter its paper config through
:func:`smoke_config`, which shrinks the counts of work (steps, epochs, seeds, trials, ...) and keeps
every shape (dimensions, widths, batch sizes, data sets), so that every paper-only cell runs on the
CPU in seconds. :func:`lib.data.smoke_online` stands in for the downloads. ``tests/test_paper_smoke.py``
runs every chapter with a paper scale of its own this way.
"""

from __future__ import annotations

import math
import re
from dataclasses import fields, is_dataclass, replace
from typing import TypeVar

from lib import validate as V

T = TypeVar("T")

# Integer config fields that count work (steps, epochs, seeds, trials, draws, samples...) and so
# shrink in a smoke run; every other field (dimensions, widths, batch sizes, data choices) keeps its
# paper value, so that the smoke run takes the paper path with the paper's shapes.
SMOKE_COUNT_FIELD = re.compile(
    r"(^|_)(steps|epochs|seeds|trials|draws|sets|restarts|runs|nets|parents|copies|finetune|sample|"
    r"samples|evals|extra|cap|trained|starts|step|early|per_config|seqs)$"
    r"|^n_(recovery|general|lemma21|impostor|fdim|one_layer|random|eval|minimal|two|deep|xor_deep)$")
SMOKE_DIVISOR = 1000  # a count c becomes min(c, max(2, ceil(c / 1000))): 4000 epochs -> 4, 32 seeds -> 2
QUICK = "<the quick config's value>"  # an override that keeps the quick scale's value of a field
# Per chapter, applied last: counts the rule above cannot see (inside tuples, data sizes that the stand-in
# data must hold), and, as QUICK, counts of experiments that every scale runs with the same code (so
# quick-scale CI covers them) whose later cells need a trained result (a non-empty selection, a
# converged student) that a few steps do not give.
SMOKE_OVERRIDES: dict = {
    "inductive_bias": {"ngd_schedule": ((0.003, 2), (0.001, 2)), "resnet_ngd_schedule": ((0.01, 2),)},
    # lib.data.SMOKE_SIZES: 6 CIFAR-100 images per class, 2 for training (X = 3), 1 for validation, 3
    # unlabelled; one epoch (the paper's CNN costs about 0.2 GFLOP per image and step)
    "multi_exit": {"n_per_class": 3, "n_val_per_class": 1, "epochs": 1, "const_taus": (1.0, 4.0),
                   "data_sizes": (2, 3), "data_size_epochs": (1, 1)},
    # deep teachers: two data sizes (the paper's largest is 2,000,000 samples), 40 steps recorded every 20
    "student_specialisation_deep": {"ns": (2000, 5000), "steps": 40, "every": 20},
    "distillation": {"deep_steps": QUICK, "mc_test": 10_000},  # one chunk of 10^4 Monte-Carlo test points
    # IMDB (§4.6.3): the VAE and one MAE target, not four (each LSTM model decodes 2,000 sentences)
    "mutual_autoencoder": {"imdb_targets": (5.0,)},
    # the region-finding grids up to 64 x 64 points (the paper's 512 and 1024 run the same code, 1M points)
    "local_linearity": {"grid_ps": (16, 32, 64)},
    # the recorded steps are range(0, early, 25) and range(early, steps + 1, 100): check_step among them
    "student_specialisation": {"early": 25, "check_step": 125, "steps": 225},
    # one zoo and one k-means restart: the compression cell clusters every net's local maps for each k
    # (up to the paper's 500), which with 3 zoos and 10 restarts ran past the 300 s cell limit in CI; and
    # only the two k that later cells read (1 and 100): the paper's larger k = 500 runs the same k-means
    "local_linearity_comparisons": {"zoos": 1, "n_init": 1, "ks": (1, 100),
                                    # the thesis' MNIST/CIFAR-10 part on one epoch of the stand-ins, 30 training and 20
                                    # test images, k = 1 and 10
                                    "paper_epochs": 1, "paper_train_rows": 30, "paper_test_images": 20, "paper_ks": (1, 10)},
    # the miniature's table with one seed (the count rule leaves 2 of the full scale's 5); the thesis' Tables
    # 4.2-4.5 (paper-only cell) with one seed, one epoch, one batch of training images, the softplus columns
    # (sigmoid is the same code) and one line per architecture family (CNN13, VGG, VGG-mp2conv, DenseNet121:
    # VGG13/16 differ from VGG11 only in their layer lists; a DenseNet121 step on 128 images costs ~20 s of a core)
    "optimization_landscape_skip_connections": {
        "table_seeds": 1, "paper_seeds": 1, "paper_epochs": 1, "paper_mnist_N": 128, "paper_cifar_N": 8,
        "paper_activations": ("softplus",), "paper_archs": ("cnn13", "vgg11", "vgg11-mp2conv", "densenet121")},
    # the digits part at its quick values but for the epochs (the count rule: 2, and 2 for the control), and the thesis'
    # MNIST/CIFAR-10 part on one epoch of the stand-ins, 40 test images, anchors among 100, grids of 16 and 8 points
    # (a conv net's local maps at 3x32x32 cost tens of milliseconds each)
    "local_linearity_image_networks": {"zoos": QUICK, "control_rows": QUICK, "p_dense": QUICK, "p_conv": QUICK,
                                       "grid_ps": QUICK, "exact_classes": QUICK, "paper_epochs": 1, "paper_test_images": 40,
                                       "paper_anchor_pool": 100, "paper_p_dense": 16, "paper_p_conv": 8},
}
# Chapters whose paper scale adds a paper-only experiment to the quick one's: in a smoke run every other
# field takes the quick value (quick-scale CI covers that code, which needs trained models), and the
# fields of the paper-only experiment (this name prefix) follow the count rule.
SMOKE_PAPER_ONLY: dict = {"mutual_autoencoder": "imdb_"}


def smoke_count(c: int) -> int:
    """A count of the paper config in a smoke run: ``min(c, max(2, ceil(c / SMOKE_DIVISOR)))``.

    Monotone, so an order between two counts (a check step before the last step) is kept.
    """
    if not isinstance(c, int) or isinstance(c, bool) or c < 0:
        raise ValueError(f"c (a count) must be an int >= 0, got {c!r}")
    return min(c, max(2, math.ceil(c / SMOKE_DIVISOR)))


def smoke_config(config: T, chapter: str = "", quick: T | None = None) -> T:
    """``config`` (a chapter's paper config, a dataclass) with its counts shrunk for a smoke run.

    Every int field whose name matches :data:`SMOKE_COUNT_FIELD` becomes :func:`smoke_count` of it
    (in a chapter of :data:`SMOKE_PAPER_ONLY` only the paper-only experiment's fields; the others take
    ``quick``'s values), then the chapter's :data:`SMOKE_OVERRIDES` apply (an override :data:`QUICK`
    takes the field of ``quick``, the chapter's quick config). A config that is no dataclass is
    returned as is.
    """
    V.instance(chapter, "chapter", str, "a str (the chapter key)")
    if not is_dataclass(config) or isinstance(config, type):
        return config
    changes = {f.name: smoke_count(getattr(config, f.name)) for f in fields(config)
               if SMOKE_COUNT_FIELD.search(f.name) and isinstance(getattr(config, f.name), int)
               and not isinstance(getattr(config, f.name), bool) and getattr(config, f.name) >= 0}
    prefix = SMOKE_PAPER_ONLY.get(chapter)
    if prefix is not None:
        if quick is None:
            raise ValueError(f"the smoke config of {chapter} keeps the quick values: pass quick")
        changes = {f.name: changes.get(f.name, getattr(config, f.name)) if f.name.startswith(prefix)
                   else getattr(quick, f.name) for f in fields(config)}
    for name, value in SMOKE_OVERRIDES.get(chapter, {}).items():
        if value is QUICK and quick is None:
            raise ValueError(f"the smoke override of {chapter}.{name} keeps the quick value: pass quick")
        changes[name] = getattr(quick, name) if value is QUICK else value
    return replace(config, **changes)
